import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient, type Client } from '@libsql/client'
import { drizzle } from 'drizzle-orm/libsql'
import { expect, it } from 'vitest'
import * as schema from '../../db/schema'
import { migrateUp, readMigrationsFromDir } from '../../server/utils/core/migrations'
import { HOST_KIND_DEFAULTS } from '../../server/utils/hosts/kind-schemas'
import { readAccessLists, readHosts, readRules, readTargetGroups } from '../../server/utils/hosts/records'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { diffDesiredState } from '../../server/utils/proxy/revisions/desired-state'
import { camelCaseKeys } from '../../server/utils/core/row-keys'
import { buildAccessListSnapshot, buildGroupSnapshot, buildHostSnapshot, buildRuleSnapshot, buildSnapshot } from '../support/factories'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))
const KINDS = 38
const KIND_FIELDS = new Set(Object.keys(HOST_KIND_DEFAULTS))
const TS = '2026-01-01T00:00:00.000Z'

// Hosts made before host kinds existed must push the same configuration after
// migration 0038, byte for byte: the rows are written as the panel wrote them
// before it (the columns of the time), the configuration built, the database
// migrated to head and read back the way the reconciler reads it, and built again.

const hosts = [
  buildHostSnapshot({ id: 1, aliases: ['www.host1.example.test'] }),
  buildHostSnapshot({ id: 2, lan_only: true, auth_required: true, target_group_id: 2 }),
  buildHostSnapshot({
    id: 3,
    waf_enabled: true,
    waf_mode: 'blocking',
    waf_profile: 'fast',
    waf_families: ['sqli'],
    waf_body_limit_kb: 256,
    waf_body_max_args: 100,
    waf_json_max_depth: 8,
    waf_body_limit_action: 'refuse',
    waf_allowed_content_types: ['application/json'],
    true_detect_mode: true,
  }),
  buildHostSnapshot({ id: 4, rate_limit_enabled: true, rate_limit_rps: 7, rate_limit_burst: 9, bouncer_enabled: false }),
  buildHostSnapshot({ id: 5, engine_down_refuse: true, tls_mode: 'auto', tls_challenge: 'http', tls_email: 'ops@example.test' }),
  buildHostSnapshot({ id: 6, tls_mode: 'auto', tls_challenge: 'tls-alpn', tls_acme_ca_url: 'https://acme.example.test/dir' }),
  buildHostSnapshot({ id: 7, enabled: false }),
]
const groups = [
  buildGroupSnapshot(),
  buildGroupSnapshot({
    id: 2,
    name: 'pool',
    lb_policy: 'least_conn',
    scheme: 'https',
    tls_skip_verify: true,
    targets: [
      { address: '10.0.0.6:8443', weight: 2 },
      { address: '10.0.0.7:8443', weight: 1 },
    ],
    health_check: { path: '/healthz', interval_seconds: 5, expect_status: 204 },
  }),
]
const rules = [
  buildRuleSnapshot({ id: 1, host_id: 1 }),
  buildRuleSnapshot({
    id: 2,
    host_id: 1,
    path: '/old/*',
    action: 'redirect',
    redirect_url: 'https://x.example.test/',
    redirect_status: 301,
  }),
  buildRuleSnapshot({ id: 3, host_id: 3, path: '/api/*', methods: ['POST'], action: 'proxy', target_group_id: 2 }),
]
const accessList = buildAccessListSnapshot({ ip_rules: [{ action: 'deny', source: '203.0.113.0/24' }], host_ids: [4] })

function _sqlValue(v: unknown): string | number | null {
  if (v === null || v === undefined) return null
  if (typeof v === 'boolean') return v ? 1 : 0
  if (typeof v === 'object') return JSON.stringify(v)
  return v as string | number
}

async function _insert(client: Client, table: string, row: Record<string, unknown>) {
  const keys = Object.keys(row)
  await client.execute({
    sql: `INSERT INTO ${table} (${keys.join(', ')}) VALUES (${keys.map(() => '?').join(', ')})`,
    args: keys.map((k) => _sqlValue(row[k])),
  })
}

async function _seedBeforeKinds(client: Client) {
  for (const g of groups) await _insert(client, 'target_groups', { ...g, created_at: TS, updated_at: TS })
  // The columns of the time: none of the kind fields, nor those of later migrations.
  const columns = new Set((await client.execute('PRAGMA table_info(hosts)')).rows.map((c) => String(c.name)))
  for (const h of hosts) {
    const before = Object.fromEntries(Object.entries(h).filter(([k]) => columns.has(k)))
    expect(Object.keys(before).some((k) => KIND_FIELDS.has(k))).toBe(false)
    await _insert(client, 'hosts', { ...before, created_at: TS, updated_at: TS })
    for (const name of [h.domain, ...h.aliases]) await _insert(client, 'host_names', { name, host_id: h.id })
  }
  const ruleColumns = new Set((await client.execute('PRAGMA table_info(rules)')).rows.map((c) => String(c.name)))
  for (const r of rules)
    await _insert(client, 'rules', {
      ...Object.fromEntries(Object.entries(r).filter(([k]) => ruleColumns.has(k))),
      created_at: TS,
      updated_at: TS,
    })
  await _insert(client, 'access_lists', {
    id: accessList.id,
    name: accessList.name,
    realm: accessList.realm,
    default_action: accessList.default_action,
    ip_rules: accessList.ip_rules,
    users: accessList.users,
    created_at: TS,
    updated_at: TS,
  })
  await _insert(client, 'host_access_lists', { host_id: 4, access_list_id: accessList.id })
}

const SNAPSHOT = { modules: ['crowdsec', 'waf', 'ratelimit', 'dns'] as const, strictSessions: true }

it('migration 0038 keeps every existing host a proxy host with the same pushed configuration, byte for byte', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mig-kinds-'))
  const client = createClient({ url: `file:${join(dir, 'db.sqlite')}` })
  try {
    await migrateUp(client, MIGRATIONS, KINDS - 1)
    await _seedBeforeKinds(client)
    const before = stableStringify(
      buildProxyConfig(
        buildSnapshot({ ...SNAPSHOT, modules: [...SNAPSHOT.modules], hosts, targetGroups: groups, rules, accessLists: [accessList] }),
      ).config,
    )

    expect(await migrateUp(client, MIGRATIONS)).toContain(KINDS)
    const db = drizzle({ client, schema })
    const read = await readHosts(db)
    expect(read.map((h) => h.kind)).toEqual(hosts.map(() => 'proxy'))
    const after = stableStringify(
      buildProxyConfig(
        buildSnapshot({
          ...SNAPSHOT,
          modules: [...SNAPSHOT.modules],
          hosts: read,
          targetGroups: await readTargetGroups(db),
          rules: await readRules(db),
          accessLists: await readAccessLists(db),
        }),
      ).config,
    )
    expect(after).toBe(before)
    // The tables that name a host still find it (the rebuild kept the ids).
    const names = await client.execute('SELECT COUNT(*) AS n FROM host_names JOIN hosts ON hosts.id = host_names.host_id')
    expect(Number(names.rows[0]!.n)).toBe(8)
    // A host of another kind needs no group now.
    await client.execute(
      `INSERT INTO hosts (domain, tls_mode, tls_challenge, kind, redirect_to, created_at, updated_at)
       VALUES ('r.example.test', 'none', 'http', 'redirect', 'https://x.example.test', '${TS}', '${TS}')`,
    )
  } finally {
    client.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

it('a revision stored before 0038 reads its hosts as proxy hosts: no change for one still a proxy, the kind for one since changed', () => {
  const stored = { domain: 'a.example.test', aliases: [], targetGroupId: 1, tlsMode: 'none' }
  const now = { ...stored, ...camelCaseKeys(HOST_KIND_DEFAULTS) }
  expect(diffDesiredState({ hosts: { 1: stored } }, { hosts: { 1: now } })).toEqual([])
  const redirect = { ...now, kind: 'redirect', redirectTo: 'https://b.example.test', targetGroupId: null }
  const changes = diffDesiredState({ hosts: { 1: stored } }, { hosts: { 1: redirect } })
  expect(changes).toHaveLength(1)
  expect(changes[0]!.fields.map((f) => [f.field, f.before, f.after]).sort()).toEqual([
    ['kind', 'proxy', 'redirect'],
    ['redirect_to', null, 'https://b.example.test'],
    ['target_group_id', 1, null],
  ])
})
