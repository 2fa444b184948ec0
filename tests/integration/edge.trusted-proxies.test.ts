import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { crowdsecBinaries, postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { ADMIN } from '../support/panel'
import { createGroup, createHost, type ProxyStack } from '../support/proxy-stack'

// Behind a CDN: the LAN gate, the bouncer, the rate limit, the access logs, the
// engine's own parsing and the panel's audit rows all judge the address the
// trusted hop forwarded, and nobody else's forwarded header counts.
// 198.51.100.40 plays the CDN (trusted); 198.51.100.41 is a direct client.

const run = promisify(execFile)
const CDN = '198.51.100.40',
  DIRECT = '198.51.100.41'
let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack

beforeAll(async () => {
  // The panel sits behind the proxy too: Caddy reaches it from loopback, and the CDN is in front of Caddy.
  edge = await startEdgeStack({
    clientAddresses: [CDN, DIRECT],
    env: { PANEL_TRUSTED_PROXIES: `127.0.0.1/32,${CDN}/32` },
    tickerSeconds: 1,
  })
  ;({ cs, stack } = edge)
  const put = await stack.panel.request('/api/settings', {
    method: 'PUT',
    cookie: stack.admin,
    body: { 'proxy.trusted_proxies': [`${CDN}/32`], 'proxy.client_ip_headers': ['X-Forwarded-For'] },
  })
  expect(put.status, put.text).toBe(200)
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${edge.up.port}` }] })
  const panelGroup = await createGroup(stack, { name: 'panel', targets: [{ address: `127.0.0.1:${stack.panel.port}` }] })
  for (const body of [
    { domain: 'lan.example.test', target_group_id: group.id, lan_only: true },
    { domain: 'shop.example.test', target_group_id: group.id, rate_limit_enabled: true, rate_limit_rps: 1, rate_limit_burst: 1 },
    { domain: 'panel.example.test', target_group_id: panelGroup.id, bouncer_enabled: false },
  ]) {
    const res = await createHost(stack, body)
    expect(res.status, res.text).toBe(201)
  }
})
afterAll(async () => {
  await edge?.stop()
})

const request = (from: string, host: string, path = '/', forwardedFor?: string) =>
  edge.get(from, host, path, forwardedFor ? ['-H', `X-Forwarded-For: ${forwardedFor}`] : [])

describe('the proxy judges the forwarded address only on connections from a trusted proxy', () => {
  it('LAN gate: a LAN visitor behind the CDN passes, a public one does not, and a direct client cannot spoof the header', async () => {
    expect((await request(CDN, 'lan.example.test', '/', '10.0.0.5')).status).toBe(200)
    expect((await request(CDN, 'lan.example.test', '/', '198.51.100.99')).status).toBe(403)
    expect((await request(DIRECT, 'lan.example.test', '/', '10.0.0.5')).status).toBe(403)
    // A client prepending a LAN address through the CDN: read from the right, the CDN's own entry is the visitor.
    expect((await request(CDN, 'lan.example.test', '/', '10.0.0.5, 198.51.100.99')).status).toBe(403)
  })

  it('bouncer: a banned visitor behind the CDN gets 403, the CDN and the other visitors do not; a banned direct source stays banned whatever it forwards', async () => {
    await postDecisions(cs, [{ value: '198.51.100.150' }, { value: DIRECT }])
    expect(
      (
        await eventually(
          () => request(CDN, 'shop.example.test', '/', '198.51.100.150'),
          (r) => r.status === 403,
          5_000,
          100,
        )
      ).status,
    ).toBe(403)
    expect((await request(CDN, 'shop.example.test', '/', '198.51.100.151')).status).toBe(200)
    expect(
      (
        await eventually(
          () => request(DIRECT, 'shop.example.test', '/', '198.51.100.151'),
          (r) => r.status === 403,
          5_000,
          100,
        )
      ).status,
    ).toBe(403)
  })

  it('rate limit: each visitor behind the CDN has an allowance of its own', async () => {
    const burst = async (visitor: string) => Promise.all([1, 2, 3].map(() => request(CDN, 'shop.example.test', `/rl-${visitor}`, visitor)))
    const first = (await burst('198.51.100.160')).map((r) => r.status).sort()
    expect(first).toEqual([200, 200, 429])
    const other = (await burst('198.51.100.161')).map((r) => r.status).sort()
    expect(other).toEqual([200, 200, 429])
  })

  it("access rows carry the visitor's address", async () => {
    const rows = await eventually(
      async () => (await stack.panel.request('/api/logs?source=caddy_access&path=rl-198&limit=50', { cookie: stack.admin })).json as any[],
      (r) => ['160', '161'].every((v) => r.filter((x) => x.path === `/rl-198.51.100.${v}`).length === 3),
      10_000,
      200,
    )
    expect(new Set(rows.filter((r) => r.path === '/rl-198.51.100.160').map((r) => r.remote_ip))).toEqual(new Set(['198.51.100.160']))
    expect(new Set(rows.filter((r) => r.path === '/rl-198.51.100.161').map((r) => r.remote_ip))).toEqual(new Set(['198.51.100.161']))
  })

  it("the engine's parsers attribute an access line to the visitor, not to the CDN", async () => {
    const line = JSON.stringify({
      level: 'info',
      ts: Date.now() / 1000,
      logger: 'http.log.access.host_2',
      msg: 'handled request',
      status: 404,
      size: 0,
      duration: 0.001,
      request: {
        remote_ip: CDN,
        remote_port: '40000',
        client_ip: '198.51.100.170',
        proto: 'HTTP/1.1',
        method: 'GET',
        host: 'shop.example.test',
        uri: '/wp-login.php',
        headers: { 'User-Agent': ['probe/1.0'] },
      },
      resp_headers: { Date: [new Date().toUTCString()] },
    })
    const { stdout } = await run(
      crowdsecBinaries().cscli,
      ['-c', cs.configFile, 'explain', '--crowdsec', crowdsecBinaries().crowdsec, '--log', line, '--type', 'caddy', '-v', '--color', 'no'],
      { maxBuffer: 16 * 1024 * 1024 },
    )
    // The hub's caddy parser takes the connection's peer; the project's node (first in s02-enrich,
    // before the whitelists judge the address) replaces it with the address Caddy computed.
    expect(stdout).toContain('evt.Meta.source_ip : 198.51.100.40 -> 198.51.100.170')
    expect(stdout.indexOf('panel/caddy-client-ip')).toBeGreaterThan(-1)
    expect(stdout.indexOf('panel/caddy-client-ip')).toBeLessThan(stdout.indexOf('crowdsecurity/whitelists'))
    expect(stdout).toMatch(/parser success/)
  })

  it("the panel's own audit rows, behind the proxy and the CDN, name the visitor", async () => {
    const res = await edge.get(CDN, 'panel.example.test', '/api/auth/login', [
      '-H',
      'X-Forwarded-For: 198.51.100.190',
      '-H',
      'content-type: application/json',
      '--data',
      JSON.stringify({ email: ADMIN.email, password: ADMIN.password }),
    ])
    expect(res.status, res.body).toBe(200)
    const audit = await stack.panel
      .db()
      .execute("SELECT remote_ip FROM logs WHERE source = 'audit' AND message = 'login' ORDER BY id DESC LIMIT 1")
    expect(audit.rows[0]?.remote_ip).toBe('198.51.100.190')
  })
})
