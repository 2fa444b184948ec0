import { mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { eventually, httpRequest } from '../support/http'
import { freshRequest } from '../support/admin-http'
import { writeMmdb } from '../support/mmdb-writer'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Geo and network rules through the production Caddy (docs/access-control.md, "Enforcement in
// the proxy"), from a network namespace whose addresses the fixture databases place:
// .10 in FR (EU) on AS 64500, .30 in DE (EU) on AS 64501, .20 nowhere (unknown, public).
// The databases are written where the panel keeps them (PANEL_DATA_DIR/geoip, the default
// PROXY_GEOIP_DIR), as its refresh does: a new file renamed into place.

const FR = '198.51.100.10'
const UNKNOWN = '198.51.100.20'
const DE = '198.51.100.30'
const US_BEHIND_PROXY = '198.51.100.200' // never on the wire: only in X-Forwarded-For

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let geoDir: string
const hostIds: Record<string, number> = {}
let listId: number

function writeCountries(placeFr: 'FR' | 'DE') {
  const place = (cc: string) => ({ country: { iso_code: cc }, continent: { code: 'EU' } })
  const country = writeMmdb(
    [
      [`${FR}/32`, place(placeFr)],
      [`${DE}/32`, place('DE')],
      [`${US_BEHIND_PROXY}/32`, { country: { iso_code: 'US' }, continent: { code: 'NA' } }],
    ],
    'Test-Country',
  )
  const tmp = join(geoDir, `country.mmdb.tmp-${placeFr}`)
  writeFileSync(tmp, country)
  renameSync(tmp, join(geoDir, 'country.mmdb'))
}

const api = (path: string, method = 'GET', body?: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: [FR, UNKNOWN, DE] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  geoDir = join(stack.panel.dataDir, 'geoip')
  mkdirSync(geoDir, { recursive: true })
  writeCountries('FR')
  writeFileSync(
    join(geoDir, 'asn.mmdb'),
    writeMmdb(
      [
        [`${FR}/32`, { autonomous_system_number: 64500, autonomous_system_organization: 'Test Net A' }],
        [`${DE}/32`, { autonomous_system_number: 64501, autonomous_system_organization: 'Test Net B' }],
      ],
      'Test-ASN',
    ),
  )
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const list = await api('/api/access-lists', 'POST', {
    name: 'office',
    realm: 'Office',
    default_action: 'allow',
    ip_rules: [{ action: 'allow', source: `${UNKNOWN}/32` }],
    users: [],
  })
  expect(list.status).toBe(201)
  listId = list.json.id
  const hosts: Record<string, unknown> = {
    // An allow-list of one country.
    'fr.example.test': { rules: [{ action: 'allow', countries: ['FR'] }], default: 'deny' },
    // A network refused, everyone else let in.
    'asn.example.test': { rules: [{ action: 'deny', asns: [64500] }], default: 'allow' },
    // Europe on the host, only DE (or the office list) under /admin.
    'path.example.test': { rules: [{ action: 'allow', continents: ['EU'] }], default: 'deny', unknown_address: 'allow' },
    'lan.example.test': { rules: [{ action: 'allow', countries: ['FR'] }], default: 'deny', unknown_address: 'allow_lan' },
    'open.example.test': { rules: [{ action: 'allow', countries: ['FR'] }], default: 'deny', unknown_address: 'allow' },
    'closed.example.test': { rules: [{ action: 'allow', countries: ['FR'] }], default: 'allow', unknown_address: 'deny' },
  }
  for (const [domain, geo_policy] of Object.entries(hosts)) {
    const res = await createHost(stack, { domain, target_group_id: group.id, geo_policy })
    expect(res.status, res.text).toBe(201)
    hostIds[domain] = res.json.id
  }
  const rule = await api(`/api/hosts/${hostIds['path.example.test']}/rules`, 'POST', {
    path: '/admin*',
    action: 'proxy',
    geo_policy: {
      rules: [
        { action: 'allow', countries: ['DE'] },
        { action: 'allow', access_list_id: listId },
      ],
      default: 'deny',
      unknown_address: 'deny',
    },
  })
  expect(rule.status, rule.text).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const get = (host: string, from: string, path = '/', headers: string[] = []) =>
  ns.curl(`http://198.51.100.1:${stack.httpPort}${path}`, ['-H', `Host: ${host}`, ...headers.flatMap((h) => ['-H', h])], {
    fromAddress: from,
  })

describe('a host policy, from the namespace', () => {
  it('lets the allowed country in and refuses another with the refusal page; the upstream sees only the first', async () => {
    const before = up.requests.length
    expect((await get('fr.example.test', FR, '/in')).status).toBe(200)
    expect(up.requests.length).toBe(before + 1)
    const refused = await get('fr.example.test', DE, '/out')
    expect(refused.status).toBe(403)
    expect(refused.body).toMatch(/^403 Access denied.*\nAccess denied: not allowed from your location or network\n/)
    expect(up.requests.length).toBe(before + 1)
  })

  it('refuses an AS and lets another network in', async () => {
    expect((await get('asn.example.test', FR)).status).toBe(403)
    expect((await get('asn.example.test', DE)).status).toBe(200)
  })

  it('a path rule /admin is stricter than its host', async () => {
    expect((await get('path.example.test', FR, '/')).status).toBe(200)
    expect((await get('path.example.test', FR, '/admin')).status).toBe(403)
    expect((await get('path.example.test', DE, '/admin')).status).toBe(200)
    // Its access list's address passes the rule, an unknown address the host (unknown_address allow).
    expect((await get('path.example.test', UNKNOWN, '/admin')).status).toBe(200)
  })
})

describe('an address the database does not place', () => {
  it('allow_lan: loopback passes, a public unknown address gets the default (deny)', async () => {
    expect((await httpRequest({ port: stack.httpPort, host: 'lan.example.test', path: '/' })).status).toBe(200)
    expect((await get('lan.example.test', UNKNOWN)).status).toBe(403)
  })

  it('allow lets it in, deny refuses it even on loopback', async () => {
    expect((await get('open.example.test', UNKNOWN)).status).toBe(200)
    expect((await get('closed.example.test', UNKNOWN)).status).toBe(403)
    expect((await httpRequest({ port: stack.httpPort, host: 'closed.example.test', path: '/' })).status).toBe(403)
    // A placed address on that host still gets the default (allow).
    expect((await get('closed.example.test', DE)).status).toBe(200)
  })
})

describe('the API', () => {
  it('refuses a policy naming an access list that does not exist (host and rule), changing nothing', async () => {
    const policy = { rules: [{ action: 'allow', access_list_id: 999 }], default: 'deny' }
    const put = await api(`/api/hosts/${hostIds['fr.example.test']}`, 'GET')
    const { domain, target_group_id } = put.json
    const updated = await api(`/api/hosts/${hostIds['fr.example.test']}`, 'PUT', {
      domain,
      target_group_id,
      tls_mode: 'none',
      geo_policy: policy,
    })
    expect(updated.status).toBe(400)
    expect(updated.json.error).toBe(
      'geo_policy.rules[0].access_list_id: access list 999 does not exist; choose one from GET /api/access-lists or name addresses in cidrs',
    )
    expect((await api(`/api/hosts/${hostIds['fr.example.test']}`)).json.geo_policy).toEqual(put.json.geo_policy)
    const rule = await api(`/api/hosts/${hostIds['fr.example.test']}/rules`, 'POST', { path: '/x', action: 'proxy', geo_policy: policy })
    expect(rule.status).toBe(400)
    expect(rule.json.error).toMatch(/^geo_policy\.rules\[0\]\.access_list_id: access list 999 does not exist/)
    expect((await api(`/api/hosts/${hostIds['fr.example.test']}/rules`)).json).toEqual([])
  })

  it('refuses to delete an access list a policy names, naming the host', async () => {
    const del = await api(`/api/access-lists/${listId}`, 'DELETE')
    expect(del.status).toBe(409)
    expect(del.json.error).toMatch(
      new RegExp(
        `^access list ${listId} is used by the geo policy of path rule \\d+ of host ${hostIds['path.example.test']} \\(path\\.example\\.test\\)`,
      ),
    )
    expect((await api(`/api/access-lists/${listId}`)).status).toBe(200)
  })
})

describe('the client address Caddy decided', () => {
  it('X-Forwarded-For counts from a trusted proxy only', async () => {
    const put = await api('/api/settings', 'PUT', {
      'proxy.trusted_proxies': [`${UNKNOWN}/32`],
      'proxy.client_ip_headers': ['X-Forwarded-For'],
    })
    expect(put.status, put.text).toBe(200)
    // From the trusted proxy: the forwarded address decides (FR passes, US is refused).
    expect((await get('fr.example.test', UNKNOWN, '/', [`X-Forwarded-For: ${FR}`])).status).toBe(200)
    expect((await get('fr.example.test', UNKNOWN, '/', [`X-Forwarded-For: ${US_BEHIND_PROXY}`])).status).toBe(403)
    // From an untrusted client the header is ignored: DE stays DE.
    expect((await get('fr.example.test', DE, '/', [`X-Forwarded-For: ${FR}`])).status).toBe(403)
    const reset = await api('/api/settings', 'PUT', { 'proxy.trusted_proxies': [] })
    expect(reset.status, reset.text).toBe(200)
  })
})

describe('a refreshed database', () => {
  it('moves the address to another country: the answer changes with no proxy restart and no push', async () => {
    const config = async () => (await freshRequest(`${stack.caddy.adminUrl}/config/`)).body
    const pushed = await config()
    const pid = stack.caddy.pid
    expect((await get('fr.example.test', FR)).status).toBe(200)
    writeCountries('DE')
    const after = await eventually(
      () => get('fr.example.test', FR),
      (r) => r.status === 403,
      30_000,
    )
    expect(after.status).toBe(403)
    expect(await config()).toBe(pushed)
    expect(stack.caddy.pid).toBe(pid)
    writeCountries('FR')
    expect(
      (
        await eventually(
          () => get('fr.example.test', FR),
          (r) => r.status === 200,
          30_000,
        )
      ).status,
    ).toBe(200)
  })
})
