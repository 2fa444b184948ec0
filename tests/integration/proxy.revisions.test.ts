import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { httpRequest } from '../support/http'
import { createTestPki, type TestPki } from '../support/certs'
import { registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Revisions, diffs, revert and dry runs (issue 17, item 5) against the
// production Caddy: what the proxy holds is read back from its admin API.

const CF_TOKEN = 'SECRETrevisions0123456789abcdefgh_-ABCD'
registerTestSecret(CF_TOKEN)

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let pki: TestPki
let groupId: number
let hostId: number

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  pki = createTestPki()
})
afterAll(async () => {
  if (stack) {
    // No secret in any stored revision (desired state, summary or configuration; the first and last are gzipped).
    const rows = await stack.panel.db().execute('SELECT desired_state, summary, config FROM config_revisions')
    expect(rows.rows.length).toBeGreaterThan(0)
    for (const r of rows.rows) {
      const text = [
        gunzipSync(Buffer.from(r.desired_state as ArrayBuffer)),
        r.summary,
        gunzipSync(Buffer.from(r.config as ArrayBuffer)),
      ].join('\n')
      expect(text).toContain('"')
      expect(text).not.toContain(CF_TOKEN)
    }
  }
  await stack?.stop()
  await up?.stop()
})

const req = (path: string, opts: { method?: string; body?: unknown } = {}) => stack.panel.request(path, { ...opts, cookie: stack.admin })
const through = (host: string) => httpRequest({ port: stack.httpPort, host, path: '/' })
const revisions = async () => (await req('/api/revisions')).json as any[]
const caddyConfig = async () => JSON.stringify(await stack.caddy.getConfig())
const auditCount = async () => Number((await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit'")).rows[0]!.n)

describe('revisions', () => {
  it('every push that changes the configuration is a revision: number, time, author, objects changed, hash', async () => {
    const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
    groupId = group.id
    const host = await createHost(stack, { domain: 'app.revisions.example.test', target_group_id: groupId })
    expect(host.json.reconcile.status).toBe('applied')
    hostId = host.json.id
    expect((await through('app.revisions.example.test')).status).toBe(200)
    const [newest] = await revisions()
    expect(newest).toMatchObject({
      author: 'admin@example.test',
      reason: 'host app.revisions.example.test created',
      reverted_to: null,
      api_token_id: null,
    })
    expect(Date.parse(newest.created_at)).toBeGreaterThan(Date.now() - 60_000)
    expect(newest.config_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(newest.summary).toContainEqual(
      expect.objectContaining({ part: 'hosts', key: String(hostId), label: 'app.revisions.example.test', change: 'added' }),
    )
    const full = (await req(`/api/revisions/${newest.id}`)).json
    expect(Object.keys(full.desired_state)).toEqual(expect.arrayContaining(['hosts', 'target_groups', 'rules', 'settings']))
    expect(full.desired_state.hosts[String(hostId)]).toMatchObject({ domain: 'app.revisions.example.test', enabled: true })
    expect(JSON.stringify(full.config)).toContain('app.revisions.example.test')
    // The stored configuration is what Caddy holds.
    expect(((await stack.caddy.getConfig()) as any).apps.http).toEqual(full.config.apps.http)
  })

  it('a save that changes nothing the proxy sees records no revision', async () => {
    const before = (await revisions()).length
    const same = await req(`/api/target-groups/${groupId}`, {
      method: 'PUT',
      body: { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] },
    })
    expect(same.status).toBe(200)
    expect((await revisions()).length).toBe(before)
  })

  it('diffs two revisions per object and field, and the configuration', async () => {
    const [a] = await revisions()
    const off = await req(`/api/hosts/${hostId}/toggle`, { method: 'POST' })
    expect(off.json.enabled).toBe(false)
    const [b] = await revisions()
    expect(b.id).toBe(a.id + 1)
    expect(b.summary).toEqual([
      { part: 'hosts', key: String(hostId), label: 'app.revisions.example.test', change: 'changed', fields: ['enabled'] },
    ])
    const diff = await req(`/api/revisions/diff?from=${a.id}&to=${b.id}`)
    expect(diff.status).toBe(200)
    expect(diff.json.changes).toEqual([
      {
        part: 'hosts',
        key: String(hostId),
        label: 'app.revisions.example.test',
        change: 'changed',
        fields: [{ field: 'enabled', before: true, after: false }],
      },
    ])
    expect(diff.json.config_diff.length).toBeGreaterThan(0)
    expect(JSON.stringify(diff.json.config_diff)).toContain('app.revisions.example.test')
    expect((await req(`/api/revisions/diff?from=${a.id}&to=999999`)).status).toBe(404)
    expect((await req(`/api/revisions/diff?from=x&to=${b.id}`)).status).toBe(400)
  })

  it('revert restores that desired state, reconciles the real Caddy, is audited and becomes a revision naming its origin', async () => {
    const all = await revisions()
    const enabledRev = all.find((r) => r.reason === 'host app.revisions.example.test created')!
    expect((await through('app.revisions.example.test')).body).not.toContain('upstream')
    const res = await req(`/api/revisions/${enabledRev.id}/revert`, { method: 'POST' })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({
      reverted_to: enabledRev.id,
      reconcile: { status: 'applied' },
      revision: { reverted_to: enabledRev.id, reason: `revert to revision ${enabledRev.id}` },
    })
    expect(res.json.revision.config_hash).toBe(enabledRev.config_hash)
    expect((await req(`/api/hosts/${hostId}`)).json.enabled).toBe(true)
    expect((await through('app.revisions.example.test')).status).toBe(200)
    const audit = await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'revision_revert'")
    expect(JSON.parse(String(audit.rows.at(-1)!.raw))).toMatchObject({ actor: 'admin@example.test', revision_id: enabledRev.id })
    expect((await req('/api/revisions/999999/revert', { method: 'POST' })).status).toBe(404)
  })

  it('revert removes objects created after the revision and brings back deleted ones', async () => {
    const [base] = await revisions()
    const extra = await createHost(stack, { domain: 'extra.revisions.example.test', target_group_id: groupId })
    expect((await through('extra.revisions.example.test')).status).toBe(200)
    const res = await req(`/api/revisions/${base.id}/revert`, { method: 'POST' })
    expect(res.status, res.text).toBe(200)
    expect((await req(`/api/hosts/${extra.json.id}`)).status).toBe(404)
    expect((await through('extra.revisions.example.test')).body).not.toContain('upstream')
    // The freed name can be used again (the name index followed).
    const again = await createHost(stack, { domain: 'extra.revisions.example.test', target_group_id: groupId })
    expect(again.status).toBe(201)
  })
})

// Issue 33: a revert used to delete groups and lists before the hosts and attachments using them (500,
// FOREIGN KEY constraint failed). Each case starts from the newest revision and reverts to it.
describe('revert in dependency order', () => {
  it('reverts past a new target group with a host on it: the host goes first, then the group', async () => {
    const [base] = await revisions()
    const group = await createGroup(stack, { name: 'later-group', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const host = await createHost(stack, { domain: 'later.revisions.example.test', target_group_id: group.id })
    expect(host.status, host.text).toBe(201)
    expect((await through('later.revisions.example.test')).status).toBe(200)
    const res = await req(`/api/revisions/${base.id}/revert`, { method: 'POST' })
    expect(res.status, res.text).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    expect((await req(`/api/hosts/${host.json.id}`)).status).toBe(404)
    expect((await req(`/api/target-groups/${group.id}`)).status).toBe(404)
    expect((await through('later.revisions.example.test')).body).not.toContain('upstream')
    expect((await through('app.revisions.example.test')).status).toBe(200)
  })

  it('reverts past a new access list attached to a host: detached first, then removed', async () => {
    const [base] = await revisions()
    const list = await req('/api/access-lists', {
      method: 'POST',
      body: { name: 'later-list', users: [{ username: 'bob', password: 'later-pass-1' }] },
    })
    expect(list.status, list.text).toBe(201)
    const attach = await req(`/api/hosts/${hostId}/access-list`, { method: 'PUT', body: { access_list_id: list.json.id } })
    expect(attach.status, attach.text).toBe(200)
    expect((await through('app.revisions.example.test')).status).toBe(401)
    const res = await req(`/api/revisions/${base.id}/revert`, { method: 'POST' })
    expect(res.status, res.text).toBe(200)
    expect((await req(`/api/access-lists/${list.json.id}`)).status).toBe(404)
    expect((await through('app.revisions.example.test')).status).toBe(200)
  })

  it('reverts past a renamed group whose name a new group took, with a host on the new one', async () => {
    const [base] = await revisions()
    const renamed = await req(`/api/target-groups/${groupId}`, {
      method: 'PUT',
      body: { name: 'app-renamed', targets: [{ address: `127.0.0.1:${up.port}` }] },
    })
    expect(renamed.status, renamed.text).toBe(200)
    const taker = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const host = await createHost(stack, { domain: 'taker.revisions.example.test', target_group_id: taker.id })
    expect(host.status, host.text).toBe(201)
    const res = await req(`/api/revisions/${base.id}/revert`, { method: 'POST' })
    expect(res.status, res.text).toBe(200)
    expect((await req(`/api/target-groups/${groupId}`)).json.name).toBe('app')
    expect((await req(`/api/target-groups/${taker.id}`)).status).toBe(404)
    expect((await req(`/api/hosts/${host.json.id}`)).status).toBe(404)
    expect((await through('app.revisions.example.test')).status).toBe(200)
  })
})

describe('dry run', () => {
  it('answers the diff a host change would cause, and changes nothing: no row, no audit, no revision, nothing pushed to Caddy', async () => {
    const heldBefore = await caddyConfig()
    const hostBefore = (await req(`/api/hosts/${hostId}`)).json
    const [revBefore, auditBefore] = [(await revisions()).length, await auditCount()]

    const put = await req(`/api/hosts/${hostId}?dry_run=1`, {
      method: 'PUT',
      body: { domain: 'app.revisions.example.test', target_group_id: groupId, tls_mode: 'none', lan_only: true },
    })
    expect(put.status, put.text).toBe(200)
    expect(put.json).toMatchObject({ dry_run: true, would_push: true })
    expect(put.json.changes).toEqual([
      expect.objectContaining({
        part: 'hosts',
        key: String(hostId),
        change: 'changed',
        fields: [{ field: 'lan_only', before: false, after: true }],
      }),
    ])
    expect(put.json.config_diff.length).toBeGreaterThan(0)

    const create = await req('/api/hosts?dry_run=1', {
      method: 'POST',
      body: { domain: 'dry.revisions.example.test', target_group_id: groupId, tls_mode: 'none' },
    })
    expect(create.status).toBe(200)
    expect(create.json.changes).toContainEqual(
      expect.objectContaining({ part: 'hosts', label: 'dry.revisions.example.test', change: 'added' }),
    )
    const del = await req(`/api/hosts/${hostId}?dry_run=1`, { method: 'DELETE' })
    expect(del.status).toBe(200)
    expect(del.json.changes).toContainEqual(expect.objectContaining({ part: 'hosts', key: String(hostId), change: 'removed' }))
    const toggle = await req(`/api/hosts/${hostId}/toggle?dry_run=1`, { method: 'POST' })
    expect(toggle.json.changes[0].fields).toEqual([{ field: 'enabled', before: true, after: false }])
    const group = await req(`/api/target-groups/${groupId}?dry_run=1`, {
      method: 'PUT',
      body: { name: 'app', targets: [{ address: '127.0.0.1:9' }] },
    })
    expect(group.json.changes[0]).toMatchObject({
      part: 'target_groups',
      change: 'changed',
      fields: [expect.objectContaining({ field: 'targets' })],
    })
    const rule = await req(`/api/hosts/${hostId}/rules?dry_run=1`, {
      method: 'POST',
      body: { path: '/api/*', action: 'respond', respond_status: 418, respond_body: 'teapot' },
    })
    expect(rule.status, rule.text).toBe(200)
    expect(rule.json.changes).toContainEqual(expect.objectContaining({ part: 'rules', change: 'added' }))
    const setting = await req('/api/settings?dry_run=1', { method: 'PUT', body: { 'acme.email': 'dry@example.test' } })
    expect(setting.json.changes).toEqual([
      expect.objectContaining({
        part: 'settings',
        key: 'acme.email',
        fields: [{ field: 'acme.email', before: '', after: 'dry@example.test' }],
      }),
    ])
    // A setting the proxy does not use: no change to show, nothing written either.
    const unrelated = await req('/api/settings?dry_run=1', { method: 'PUT', body: { 'logs.retention_days': 7 } })
    expect(unrelated.json).toMatchObject({ dry_run: true, would_push: false, changes: [] })

    expect(await caddyConfig()).toBe(heldBefore)
    expect((await req(`/api/hosts/${hostId}`)).json).toEqual(hostBefore)
    expect((await req('/api/hosts')).json.map((h: any) => h.domain)).not.toContain('dry.revisions.example.test')
    expect((await req(`/api/hosts/${hostId}/rules`)).json).toEqual([])
    expect((await req('/api/settings')).json).toMatchObject({ 'acme.email': '', 'logs.retention_days': 30 })
    expect((await revisions()).length).toBe(revBefore)
    expect(await auditCount()).toBe(auditBefore)
    expect((await through('app.revisions.example.test')).status).toBe(200)
  })

  it('bad input in a dry run is the same 4xx; a bad flag is 400', async () => {
    const bad = await req(`/api/hosts/${hostId}?dry_run=1`, { method: 'PUT', body: { domain: 'not a domain', target_group_id: groupId } })
    expect(bad.status).toBe(400)
    const flag = await req(`/api/hosts/${hostId}/toggle?dry_run=maybe`, { method: 'POST' })
    expect(flag.status).toBe(400)
    expect(flag.json.error).toMatch(/dry_run: must be 1/)
    expect((await req(`/api/hosts/${hostId}`)).json.enabled).toBe(true)
  })
})

describe('attribution and WAF exclusions', () => {
  it('a change made with an API token names the token in its revision', async () => {
    const token = await req('/api/tokens', { method: 'POST', body: { name: 'revisions-bot', scope: 'admin', expires_in_days: 1 } })
    registerTestSecret(token.json.secret)
    const res = await stack.panel.request(`/api/hosts/${hostId}/toggle`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.json.secret}` },
    })
    expect(res.status).toBe(200)
    const [newest] = await revisions()
    expect(newest).toMatchObject({ author: 'admin@example.test', api_token_id: token.json.token.id })
    await req(`/api/hosts/${hostId}/toggle`, { method: 'POST' })
  })

  it('a WAF exclusion is previewed with dry_run, and a revert takes it away again', async () => {
    await req(`/api/hosts/${hostId}`, {
      method: 'PUT',
      body: { domain: 'app.revisions.example.test', target_group_id: groupId, tls_mode: 'none', waf_enabled: true },
    })
    const [before] = await revisions()
    const dry = await req(`/api/hosts/${hostId}/waf-exclusions?dry_run=1`, { method: 'POST', body: { rule_id: 942100, path: '/search' } })
    expect(dry.status, dry.text).toBe(200)
    expect(dry.json.changes).toEqual([expect.objectContaining({ part: 'waf_exclusions', change: 'added' })])
    expect((await req(`/api/hosts/${hostId}/waf-exclusions`)).json).toEqual([])
    const made = await req(`/api/hosts/${hostId}/waf-exclusions`, { method: 'POST', body: { rule_id: 942100, path: '/search' } })
    expect(made.status, made.text).toBe(201)
    const reverted = await req(`/api/revisions/${before.id}/revert`, { method: 'POST' })
    expect(reverted.status, reverted.text).toBe(200)
    expect((await req(`/api/hosts/${hostId}/waf-exclusions`)).json).toEqual([])
  })
})

describe('revert refusals and retention', () => {
  it('refuses (409) a revert to a state whose uploaded certificate was deleted, and changes nothing', async () => {
    const domain = 'tls.revisions.example.test'
    const host = await createHost(stack, { domain, target_group_id: groupId })
    const leaf = pki.leaf(domain)
    const form = new FormData()
    for (const [k, v] of Object.entries({ cert_pem: leaf.certPem, key_pem: leaf.keyPem }))
      form.append(k, new Blob([v], { type: 'application/x-pem-file' }), `${k}.pem`)
    const upload = await stack.panel.request(`/api/manual-certs/${host.json.id}`, { method: 'POST', cookie: stack.admin, form })
    expect(upload.status, upload.text).toBe(201)
    const [withCert] = await revisions()
    expect(withCert.summary).toContainEqual(expect.objectContaining({ label: domain, change: 'changed', fields: ['tls_mode'] }))
    expect((await req(`/api/manual-certs/${host.json.id}?revert=none`, { method: 'DELETE' })).status).toBe(204)

    const held = await caddyConfig()
    const [revCount, auditBefore] = [(await revisions()).length, await auditCount()]
    const refused = await req(`/api/revisions/${withCert.id}/revert`, { method: 'POST' })
    expect(refused.status).toBe(409)
    expect(refused.json.error).toMatch(
      new RegExp(`revision ${withCert.id} cannot be restored: host ${domain} used an uploaded certificate that has since been deleted`),
    )
    expect((await req(`/api/hosts/${host.json.id}`)).json.tls_mode).toBe('none')
    expect((await revisions()).length).toBe(revCount)
    expect(await auditCount()).toBe(auditBefore)
    expect(await caddyConfig()).toBe(held)
  })

  it('masks DNS credentials in stored configurations and diffs, and refuses a revert once they are gone', async () => {
    expect(
      (await req('/api/dns-providers/provider_a', { method: 'PUT', body: { enabled: true, credentials: { api_token: CF_TOKEN } } })).status,
    ).toBe(200)
    const dns = await createHost(stack, {
      domain: 'dns.revisions.example.test',
      target_group_id: groupId,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_a',
      tls_acme_ca_url: 'https://127.0.0.1:9/dir',
      tls_email: 'ops@example.test',
    })
    expect(dns.status, dns.text).toBe(201)
    // Caddy holds the token (the spec inlines it), the revision holds it masked.
    expect(await caddyConfig()).toContain(CF_TOKEN)
    const [rev, prev] = await revisions()
    const full = await req(`/api/revisions/${rev.id}`)
    expect(JSON.stringify(full.json.config)).toContain('[redacted]')
    const diff = await req(`/api/revisions/diff?from=${prev.id}&to=${rev.id}`)
    expect(diff.json.config_diff.length).toBeGreaterThan(0)
    // The harness fails any response carrying CF_TOKEN; the stored rows are checked after all tests.

    // The credential goes (host deleted, provider disabled): a revert to the DNS host's state is refused.
    expect((await req(`/api/hosts/${dns.json.id}`, { method: 'DELETE' })).status).toBe(204)
    const disabled = await req('/api/dns-providers/provider_a', { method: 'PUT', body: { enabled: false } })
    expect(disabled.status, disabled.text).toBe(200)
    const held = await caddyConfig()
    const refused = await req(`/api/revisions/${rev.id}/revert`, { method: 'POST' })
    expect(refused.status).toBe(409)
    expect(refused.json.error).toMatch(
      new RegExp(
        `revision ${rev.id} cannot be restored: host dns.revisions.example.test needs DNS provider provider_a, whose credentials are gone`,
      ),
    )
    expect((await req(`/api/hosts/${dns.json.id}`)).status).toBe(404)
    expect(await caddyConfig()).toBe(held)
  })

  it('carries access lists: previewed, reverted with their users, never a password hash; a revert needing a changed password is a 409', async () => {
    const domain = 'listed.revisions.example.test'
    const host = await createHost(stack, { domain, target_group_id: groupId })
    const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` })
    const as = (password?: string) =>
      httpRequest({ port: stack.httpPort, host: domain, path: '/', headers: password ? basic('alice', password) : {} })
    const list = await req('/api/access-lists', {
      method: 'POST',
      body: { name: 'revisions-staff', users: [{ username: 'alice', password: 'first-pass-1' }] },
    })
    expect(list.status, list.text).toBe(201)
    expect((await req(`/api/hosts/${host.json.id}/access-list`, { method: 'PUT', body: { access_list_id: list.json.id } })).status).toBe(
      200,
    )
    expect((await as()).status).toBe(401)
    expect((await as('first-pass-1')).status).toBe(200)
    const [withList] = await revisions()
    expect(withList.summary).toContainEqual(expect.objectContaining({ part: 'host_access_lists', change: 'added' }))
    // The stored desired state holds a fingerprint of the password hash, not the hash.
    const stored = await stack.panel.db().execute({ sql: 'SELECT desired_state FROM config_revisions WHERE id = ?', args: [withList.id] })
    const state = JSON.parse(gunzipSync(Buffer.from(stored.rows[0]!.desired_state as ArrayBuffer)).toString('utf8'))
    expect(state.access_lists[String(list.json.id)].users).toEqual([
      { username: 'alice', password_fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/) },
    ])
    expect(JSON.stringify(state)).not.toMatch(/\$2[aby]\$/)

    // A dry run of a password change: the list is named as changed, nothing applied.
    const dry = await req(`/api/access-lists/${list.json.id}?dry_run=1`, {
      method: 'PUT',
      body: { name: 'revisions-staff', users: [{ username: 'alice', password: 'second-pass-2' }] },
    })
    expect(dry.status, dry.text).toBe(200)
    expect(dry.json.changes).toContainEqual(expect.objectContaining({ part: 'access_lists', change: 'changed' }))
    expect((await as('first-pass-1')).status).toBe(200)

    // Detached, then the revert brings the list back in front of the host, with alice's password.
    expect((await req(`/api/hosts/${host.json.id}/access-list`, { method: 'PUT', body: { access_list_id: null } })).status).toBe(200)
    expect((await as()).status).toBe(200)
    const reverted = await req(`/api/revisions/${withList.id}/revert`, { method: 'POST' })
    expect(reverted.status, reverted.text).toBe(200)
    expect((await as()).status).toBe(401)
    expect((await as('first-pass-1')).status).toBe(200)

    // The panel keeps no old password: once alice's changes, that revision cannot come back.
    expect(
      (
        await req(`/api/access-lists/${list.json.id}`, {
          method: 'PUT',
          body: { name: 'renamed-staff', users: [{ username: 'alice', password: 'second-pass-2' }] },
        })
      ).status,
    ).toBe(200)
    const held = await caddyConfig()
    const refused = await req(`/api/revisions/${withList.id}/revert`, { method: 'POST' })
    expect(refused.status).toBe(409)
    expect(refused.json.error).toMatch(
      new RegExp(
        `revision ${withList.id} cannot be restored: user alice of access list revisions-staff had a password that has since been changed`,
      ),
    )
    expect(await caddyConfig()).toBe(held)
    expect((await req(`/api/access-lists/${list.json.id}`)).json.name).toBe('renamed-staff')
    expect((await as('second-pass-2')).status).toBe(200)
  })

  it('keeps only revisions.retention_count revisions', async () => {
    expect((await req('/api/settings', { method: 'PUT', body: { 'revisions.retention_count': 2 } })).status).toBe(200)
    await req(`/api/hosts/${hostId}/toggle`, { method: 'POST' })
    await req(`/api/hosts/${hostId}/toggle`, { method: 'POST' })
    const left = await revisions()
    expect(left).toHaveLength(2)
    expect(left[0].id).toBe(left[1].id + 1)
    expect((await req('/api/settings?dry_run=1', { method: 'PUT', body: { 'revisions.retention_count': 1 } })).status).toBe(400)
  })
})
