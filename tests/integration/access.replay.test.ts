import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { eventually, httpRequest } from '../support/http'
import { writeMmdb } from '../support/mmdb-writer'
import { makeTempDir } from '../support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// "Try before it applies" (docs/access-control.md) end to end: the real Caddy logs requests from a
// public client namespace, the panel ingests them with the country and the AS number the fixture
// databases give the addresses, and the preview API counts them as a policy would have answered.
// The oracle against a brute-force count is tests/unit/access-replay.test.ts.

const FR_CLIENT = '198.51.100.10' // FR, AS 64500
const DE_CLIENT = '198.51.100.20' // DE, AS 64501
const VIEWER = { email: 'replay-viewer@example.test', password: 'replay-viewer-pass-1' }
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let hostId: number
let viewer: string

beforeAll(async () => {
  const dataDir = makeTempDir('panel-replay-')
  mkdirSync(join(dataDir, 'geoip'))
  writeFileSync(
    join(dataDir, 'geoip/country.mmdb'),
    writeMmdb([
      ['198.51.100.0/28', { country: { iso_code: 'FR' } }],
      ['198.51.100.16/28', { country: { iso_code: 'DE' } }],
    ]),
  )
  writeFileSync(
    join(dataDir, 'geoip/asn.mmdb'),
    writeMmdb(
      [
        ['198.51.100.0/28', { autonomous_system_number: 64500, autonomous_system_organization: 'Example Net FR' }],
        ['198.51.100.16/28', { autonomous_system_number: 64501, autonomous_system_organization: 'Beispiel DE' }],
      ],
      'Test-ASN',
    ),
  )
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: [FR_CLIENT, DE_CLIENT] })
  stack = await startProxyStack({ dataDir, httpListenExtra: ['198.51.100.1'] })
  const group = await createGroup(stack, { name: 'up', targets: [{ address: `127.0.0.1:${up.port}` }] })
  hostId = (await createHost(stack, { domain: 'replay.example.test', target_group_id: group.id })).json.id
  const res = await stack.panel.request('/api/users', { method: 'POST', cookie: stack.admin, body: { ...VIEWER, role: 'viewer' } })
  expect(res.status, res.text).toBe(201)
  viewer = await stack.panel.login(VIEWER.email, VIEWER.password)
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const preview = (body: unknown, cookie = stack.admin) => stack.panel.request('/api/access/preview', { method: 'POST', cookie, body })

describe('the preview of a geo policy over what the real proxy logged', () => {
  it('access rows carry the AS number of asn.mmdb, and the replay counts by it', async () => {
    const from = (address: string, path: string) =>
      ns.curl(`http://198.51.100.1:${stack.httpPort}${path}`, ['-H', 'Host: replay.example.test'], { fromAddress: address })
    for (const path of ['/fr/a', '/fr/a', '/fr/a', '/fr/b']) expect((await from(FR_CLIENT, path)).status).toBe(200)
    for (const path of ['/de/a', '/de/b']) expect((await from(DE_CLIENT, path)).status).toBe(200)
    expect((await httpRequest({ port: stack.httpPort, host: 'replay.example.test', path: '/lan' })).status).toBe(200)

    const rows = await eventually(
      async () =>
        (
          await stack.panel
            .db()
            .execute("SELECT remote_ip, country, asn, path FROM logs WHERE source = 'caddy_access' AND host_domain = 'replay.example.test'")
        ).rows,
      (r) => r.length >= 7,
      10_000,
      200,
    )
    const of = (ip: string) => rows.filter((r) => r.remote_ip === ip).map((r) => [r.country, r.asn])
    expect(of(FR_CLIENT)).toEqual(Array(4).fill(['FR', 64500]))
    expect(of(DE_CLIENT)).toEqual(Array(2).fill(['DE', 64501]))
    expect(of('127.0.0.1')).toEqual([['LAN', null]])

    const audits = async () => Number((await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit'")).rows[0]!.n)
    const auditsBefore = await audits()
    const res = await preview({ policy: { rules: [{ action: 'deny', asns: [64500] }], default: 'allow' }, host_id: hostId, days: 1 })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({
      days: 1,
      requests: 7,
      refused_requests: 4,
      refused_addresses: 1,
      unknown_requests: 1,
      top_countries: [{ country: 'FR', name: 'France', requests: 4 }],
      top_networks: [{ asn: 64500, name: 'Example Net FR', requests: 4 }],
      top_paths: [
        { path: '/fr/a', requests: 3 },
        { path: '/fr/b', requests: 1 },
      ],
      // The admin's own session comes from loopback: a LAN address, which allow_lan lets in.
      lockout: { would_lock_you_out: false, your_addresses: [{ ip: '127.0.0.1', refused: false }] },
    })
    expect(Date.now() - Date.parse(res.json.since)).toBeGreaterThanOrEqual(86_400_000)

    // Only Europe, LAN refused: everything but the loopback row is let in, and the admin is locked out.
    const strict = await preview({ policy: { rules: [{ action: 'allow', continents: ['EU'] }], default: 'deny', unknown_address: 'deny' } })
    expect(strict.json).toMatchObject({ requests: 7, refused_requests: 1, top_paths: [{ path: '/lan', requests: 1 }] })
    expect(strict.json.lockout).toEqual({ would_lock_you_out: true, your_addresses: [{ ip: '127.0.0.1', refused: true }] })

    const ban = await stack.panel.request('/api/security/countries/de/preview?days=2', { cookie: stack.admin })
    expect(ban.status, ban.text).toBe(200)
    expect(ban.json).toMatchObject({
      days: 2,
      requests: 7,
      refused_requests: 2,
      top_countries: [{ country: 'DE', name: 'Germany', requests: 2 }],
      top_networks: [{ asn: 64501, name: 'Beispiel DE', requests: 2 }],
    })
    // A read: nothing was written.
    expect(await audits()).toBe(auditsBefore)
  })

  it('admins only; a bad body or a missing host is a 400 that names the field; an unknown country a 404', async () => {
    const policy = { rules: [{ action: 'deny', countries: ['FR'] }], default: 'allow' }
    const v = await preview({ policy }, viewer)
    expect(v.status, v.text).toBe(403)
    expect((await stack.panel.request('/api/security/countries/fr/preview', { cookie: viewer })).status).toBe(403)

    const bad = await preview({ policy: { rules: [{ action: 'deny', countries: ['XX'] }], default: 'maybe' } })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/policy\.(rules\.0\.countries\.0|default)/)
    expect((await preview({ policy, days: 0 })).json.error).toMatch(/^days: /)
    const missing = await preview({ policy, host_id: 999_999 })
    expect([missing.status, missing.json]).toEqual([400, { error: 'host_id: host 999999 does not exist' }])
    const days = await stack.panel.request('/api/security/countries/fr/preview?days=91', { cookie: stack.admin })
    expect([days.status, days.json.error]).toEqual([400, expect.stringMatching(/^query: days: |^days: /)])
    expect((await stack.panel.request('/api/security/countries/zz/preview', { cookie: stack.admin })).status).toBe(404)
  })
})
