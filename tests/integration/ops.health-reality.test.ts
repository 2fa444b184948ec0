import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, httpRequest } from '../support/http'
import { freePort } from '../support/ports'
import { writeMmdb } from '../support/mmdb-writer'
import { createTestPki } from '../support/certs'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Health that follows reality (issue 35, item 1), through the production Caddy:
// a target taken down is unhealthy with its cause on the group, the host and in
// both health endpoints' problems, and healthy again once it answers; the
// proxy's repeated health-check lines are one log row naming the target, its
// group, its host and the cause; a failed ACME order and a stale country
// database are problems too, each with the screen that fixes it.

let stack: ProxyStack
let upstream: TestUpstream
let geoServer: Server
let geoBody: Buffer
let groupId: number
let hostId: number
const DAY_S = 86_400

const get = async (path: string) => {
  const res = await stack.panel.request(path, { cookie: stack.admin })
  expect(res.status, `${path}: ${res.text}`).toBe(200)
  return res.json
}
const targetOf = async () => (await get(`/api/target-groups/${groupId}`)).health?.targets?.[0]
const problemsOf = async (kind: string) => {
  const [dash, sys] = await Promise.all([get('/api/dashboard/health'), get('/api/system/health')])
  return { dash: dash.problems.filter((p: any) => p.kind === kind), sys: sys.problems.filter((p: any) => p.kind === kind) }
}

beforeAll(async () => {
  const geoPort = await freePort()
  geoBody = writeMmdb([['5.0.0.0/24', { country_code: 'LU' }]], 'Test-Country', { buildEpoch: Math.floor(Date.now() / 1000) })
  geoServer = createServer((_req, res) => res.end(geoBody))
  await new Promise<void>((r) => geoServer.listen(geoPort, '127.0.0.1', r))
  stack = await startProxyStack({
    env: { GEOIP_COUNTRY_URL: `http://127.0.0.1:${geoPort}/country.mmdb`, GEOIP_ASN_URL: `http://127.0.0.1:${geoPort}/asn.mmdb` },
  })
  upstream = await startTestUpstream()
  const group = await createGroup(stack, {
    name: 'shop-backend',
    targets: [{ address: `127.0.0.1:${upstream.port}` }],
    health_check: { path: '/health', interval_seconds: 1, expect_status: 200 },
  })
  groupId = group.id
  const host = await createHost(stack, { domain: 'shop.example.test', target_group_id: groupId })
  expect(host.status).toBe(201)
  hostId = host.json.id
})
afterAll(async () => {
  await stack?.stop()
  await upstream?.stop()
  await new Promise<void>((r) => (geoServer ? geoServer.close(() => r()) : r()))
})

describe('target health', () => {
  it('a live target is healthy on its group and its host, and no problem', async () => {
    // Healthy once the proxy holds the group (its admin API lists the upstream).
    const t = await eventually(targetOf, (x) => x?.state === 'healthy', 20_000, 200)
    expect(t).toMatchObject({ address: `127.0.0.1:${upstream.port}`, state: 'healthy', cause: null, failed_checks: 0 })
    expect((await get(`/api/hosts/${hostId}`)).health.state).toBe('healthy')
    expect(await problemsOf('target_unhealthy')).toEqual({ dash: [], sys: [] })
  })

  it('taken down: unhealthy with the cause and since when, on the group, the host, the host list and both health endpoints', async () => {
    const before = Date.now()
    await upstream.setDown(true)
    const t = await eventually(targetOf, (x) => x?.state === 'unhealthy', 20_000, 200)
    expect(t.cause).toBe('connect: connection refused')
    expect(Date.parse(t.since)).toBeGreaterThanOrEqual(before - 1_000)
    const host = await get(`/api/hosts/${hostId}`)
    expect(host.health).toMatchObject({ state: 'unhealthy', targets: [{ state: 'unhealthy', cause: 'connect: connection refused' }] })
    expect((await get('/api/hosts')).find((h: any) => h.id === hostId).health.state).toBe('unhealthy')
    const { dash, sys } = await problemsOf('target_unhealthy')
    expect(dash).toEqual([
      {
        kind: 'target_unhealthy',
        severity: 'error',
        subject: `target 127.0.0.1:${upstream.port} of group shop-backend`,
        text: 'connect: connection refused',
        since: t.since,
        fix: { to: `/target-groups#group-${groupId}`, text: 'Target group shop-backend' },
      },
    ])
    expect(sys).toEqual(dash)
  })

  it('the repeated failed checks are one warning row naming the target, group, host and cause; a request names them too', async () => {
    // Several more failed checks reach the panel (counted on the target) ...
    await eventually(targetOf, (x) => x?.failed_checks >= 4, 20_000, 200)
    const rows = (
      await stack.panel.db().execute({
        sql: "SELECT level, message, host_id FROM logs WHERE source = 'caddy_error' AND raw LIKE '%health_checker%' AND raw LIKE ?",
        args: [`%127.0.0.1:${upstream.port}%`],
      })
    ).rows
    // ... and are stored once, at level warn, with the host they serve.
    expect(rows.map((r) => ({ ...r }))).toEqual([
      {
        level: 'warn',
        message: `target 127.0.0.1:${upstream.port} of target group shop-backend, used by shop.example.test failed its health check: connect: connection refused`,
        host_id: hostId,
      },
    ])
    const res = await httpRequest({ port: stack.httpPort, host: 'shop.example.test', path: '/' })
    expect(res.status).toBe(503)
    const noUpstream = await eventually(
      async () =>
        (await get(`/api/logs?source=caddy_error&host_id=${hostId}`)).filter((r: any) => /^no upstreams available/.test(r.message ?? '')),
      (r) => r.length > 0,
      15_000,
      200,
    )
    expect(noUpstream[0]).toMatchObject({
      level: 'warn',
      message: `no upstreams available: target group shop-backend: 127.0.0.1:${upstream.port} is unhealthy (connect: connection refused)`,
    })
  })

  it('recovered: healthy again everywhere, and the recovery is a row', async () => {
    await upstream.setDown(false)
    const t = await eventually(targetOf, (x) => x?.state === 'healthy', 20_000, 200)
    expect(t).toMatchObject({ cause: null, failed_checks: 0 })
    expect((await get(`/api/hosts/${hostId}`)).health.state).toBe('healthy')
    expect(await problemsOf('target_unhealthy')).toEqual({ dash: [], sys: [] })
    const up = (
      await stack.panel.db().execute({
        sql: "SELECT level, message FROM logs WHERE source = 'caddy_error' AND message LIKE '%is healthy again'",
        args: [],
      })
    ).rows
    expect(up.map((r) => r.message)).toEqual([
      `target 127.0.0.1:${upstream.port} of target group shop-backend, used by shop.example.test is healthy again`,
    ])
  })

  it('an answer with the wrong status is unhealthy with that status as the cause', async () => {
    upstream.setFailing(500)
    const t = await eventually(targetOf, (x) => x?.state === 'unhealthy', 20_000, 200)
    expect(t.cause).toBe('unexpected status code 500')
    upstream.setFailing(null)
    await eventually(targetOf, (x) => x?.state === 'healthy', 20_000, 200)
  })

  it('a group without a health check says its targets are unknown, and why', async () => {
    const plain = await createGroup(stack, { name: 'plain', targets: [{ address: `127.0.0.1:${upstream.port}` }] })
    expect((await get(`/api/target-groups/${plain.id}`)).health).toEqual({
      state: 'unknown',
      targets: [
        {
          address: `127.0.0.1:${upstream.port}`,
          state: 'unknown',
          cause: 'no health check: turn one on to have the proxy test this target',
          since: null,
          failed_checks: 0,
          failed_requests: expect.any(Number),
        },
      ],
    })
  })
})

describe('certificates and the country database as problems', () => {
  it('a failed ACME order is a problem of its host, in both endpoints', async () => {
    const refusingCa = `https://127.0.0.1:${await freePort()}/dir`
    const host = await createHost(stack, {
      domain: 'nocert.example.test',
      target_group_id: groupId,
      tls_mode: 'auto',
      tls_challenge: 'http',
      tls_acme_ca_url: refusingCa,
      tls_email: 'ops@example.test',
    })
    expect(host.status).toBe(201)
    const { dash, sys } = await eventually(
      () => problemsOf('certificate_failed'),
      (p) => p.dash.length > 0,
      30_000,
      250,
    )
    expect(dash).toEqual([
      {
        kind: 'certificate_failed',
        severity: 'error',
        subject: 'certificate of nocert.example.test',
        text: expect.stringMatching(/^order failed: /),
        since: expect.any(String),
        fix: { to: '/certificates#fail-h', text: 'Failed ACME attempts' },
      },
    ])
    expect(sys).toEqual(dash)
  })

  it('an uploaded certificate that expires within 21 days is a warning; the link goes to the uploaded certificates', async () => {
    const host = await createHost(stack, { domain: 'soon.example.test', target_group_id: groupId })
    expect(host.status).toBe(201)
    const leaf = createTestPki().leaf('soon.example.test', { days: 5 })
    const form = new FormData()
    for (const [k, v] of Object.entries({ cert_pem: leaf.certPem, key_pem: leaf.keyPem }))
      form.append(k, new Blob([v], { type: 'application/x-pem-file' }), `${k}.pem`)
    const up = await stack.panel.request(`/api/manual-certs/${host.json.id}`, { method: 'POST', cookie: stack.admin, form })
    expect(up.status, up.text).toBe(201)
    const { dash, sys } = await problemsOf('certificate_expiring')
    expect(dash).toEqual([
      {
        kind: 'certificate_expiring',
        severity: 'warning',
        subject: 'uploaded certificate of soon.example.test',
        text: expect.stringMatching(/^expires in [45] day\(s\): upload a new one$/),
        since: null,
        fix: { to: '/certificates#up-h', text: 'Uploaded certificates' },
      },
    ])
    expect(sys).toEqual(dash)
  })

  it('a fresh country database is no problem; one older than 30 days is a warning with its age', async () => {
    const refresh = async () =>
      expect((await stack.panel.request('/api/geoip/refresh', { method: 'POST', cookie: stack.admin })).status).toBe(200)
    await refresh()
    expect(await problemsOf('geo_database_stale')).toEqual({ dash: [], sys: [] })
    const built = Math.floor(Date.now() / 1000) - 1_109 * DAY_S
    geoBody = writeMmdb([['5.0.0.0/24', { country_code: 'LU' }]], 'Test-Country', { buildEpoch: built })
    await refresh()
    const { dash, sys } = await problemsOf('geo_database_stale')
    expect(dash).toEqual([
      {
        kind: 'geo_database_stale',
        severity: 'warning',
        subject: 'country database',
        text: '1109 days old (more than 30): addresses that moved are placed in the wrong country',
        since: new Date(built * 1000).toISOString(),
        fix: { to: '/security#countries', text: 'Download the databases' },
      },
    ])
    expect(sys).toEqual(dash)
  })
})
