import { request as httpsRequest } from 'node:https'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { eventually, httpRequest } from '../support/http'
import { freePort } from '../support/ports'
import { createTestPki } from '../support/certs'
import { registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// The real Caddy writes real logs with the generated configuration; the panel ingests them.
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let hostId: number
let ruleId: number

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10'] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  const group = await createGroup(stack, { name: 'up', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const dead = await createGroup(stack, { name: 'dead', targets: [{ address: `127.0.0.1:${await freePort()}` }] })
  hostId = (await createHost(stack, { domain: 'logs.example.test', target_group_id: group.id })).json.id
  ruleId = (
    await stack.panel.request(`/api/hosts/${hostId}/rules`, {
      method: 'POST',
      cookie: stack.admin,
      body: { path: '/broken/*', action: 'proxy', target_group_id: dead.id },
    })
  ).json.id
  await createHost(stack, { domain: 'lan-logs.example.test', target_group_id: group.id, lan_only: true })
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

describe('access and error rows from the real Caddy', () => {
  it('records 2xx, 404, 5xx from a failing upstream and a LAN-only 403, with host, rule and client', async () => {
    const through = (path: string) =>
      httpRequest({ port: stack.httpPort, host: 'logs.example.test', path, headers: { 'user-agent': 'logs-test/1.0' } })
    expect((await through('/ok')).status).toBe(200)
    up.setFailing(404)
    expect((await through('/not-here')).status).toBe(404)
    up.setFailing(null)
    expect((await through('/broken/x')).status).toBe(502)
    expect((await ns.curl(`http://198.51.100.1:${stack.httpPort}/private`, ['-H', 'Host: lan-logs.example.test'])).status).toBe(403)

    const rows = await eventually(
      async () => (await stack.panel.request('/api/logs?source=caddy_access&limit=50', { cookie: stack.admin })).json as any[],
      (r) => ['/ok', '/not-here', '/broken/x', '/private'].every((p) => r.some((x) => x.path === p)),
      10_000,
      200,
    )
    const by = (p: string) => rows.find((r) => r.path === p)
    expect(by('/ok')).toMatchObject({
      host_id: hostId,
      host_domain: 'logs.example.test',
      rule_id: null,
      status: 200,
      method: 'GET',
      remote_ip: '127.0.0.1',
      user_agent: 'logs-test/1.0',
      country: 'LAN',
    })
    expect(by('/ok').duration).toBeGreaterThan(0)
    expect(by('/not-here')).toMatchObject({ status: 404, host_id: hostId })
    expect(by('/broken/x')).toMatchObject({ status: 502, rule_id: ruleId, level: 'error' })
    expect(by('/private')).toMatchObject({ status: 403, remote_ip: '198.51.100.10', host_domain: 'lan-logs.example.test' })
    const errors = await eventually(
      async () => (await stack.panel.request('/api/logs?source=caddy_error', { cookie: stack.admin })).json as any[],
      (r) => r.some((e) => e.path === '/broken/x'),
      10_000,
      200,
    )
    // A new panel shows pages, so the LAN gate's 403 is a handled error too and has its own error line.
    expect(errors.find((e) => e.path === '/broken/x')).toMatchObject({
      status: 502,
      message: expect.stringMatching(/connection refused|dial/),
    })
    const stats = (await stack.panel.request(`/api/logs/stats?host_id=${hostId}&source=caddy_access`, { cookie: stack.admin })).json
    expect(stats.by_status_class).toMatchObject({ '2xx': 1, '4xx': 1, '5xx': 1 })
  })

  it('a Host the proxy does not serve: 404 on plain HTTP, 421 over TLS, logged with that status and counted as 4xx, while a TLS host keeps its redirect', async () => {
    // A TLS host (an uploaded certificate: no CA needed) gives the proxy its HTTPS server.
    const group = (await stack.panel.request('/api/target-groups', { cookie: stack.admin })).json[0]
    const tlsHost = (await createHost(stack, { domain: 'tls-logs.example.test', target_group_id: group.id })).json
    const pki = createTestPki()
    const leaf = pki.leaf('tls-logs.example.test', { sans: ['tls-logs.example.test'] })
    registerTestSecret(leaf.keyPem)
    const form = new FormData()
    form.append('cert_pem', leaf.certPem)
    form.append('key_pem', leaf.keyPem)
    form.append('chain_pem', pki.intermediatePem)
    expect((await stack.panel.request(`/api/manual-certs/${tlsHost.id}`, { method: 'POST', cookie: stack.admin, form })).status).toBe(201)

    const plain = await httpRequest({ port: stack.httpPort, host: 'nobody.example.test', path: '/unknown-plain' })
    expect([plain.status, plain.body]).toEqual([404, 'No site is configured for this host name.\n'])
    // Caddy's own HTTP->HTTPS redirect of the TLS host still comes before the refusal.
    const redirect = await httpRequest({ port: stack.httpPort, host: 'tls-logs.example.test', path: '/to-https' })
    expect(redirect.status).toBe(308)
    expect(redirect.headers.location).toMatch(/^https:\/\/tls-logs\.example\.test(:\d+)?\/to-https$/)
    // Over TLS with the TLS host's name in SNI but another Host header: misdirected.
    const tls = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: stack.httpsPort,
          path: '/unknown-tls',
          servername: 'tls-logs.example.test',
          headers: { host: 'nobody.example.test' },
          ca: pki.rootPem,
        },
        (res) => {
          let body = ''
          res.on('data', (c) => {
            body += c
          })
          res.on('end', () => resolve({ status: res.statusCode!, body }))
        },
      )
      req.on('error', reject)
      req.end()
    })
    expect(tls.status).toBe(421)

    const rows = await eventually(
      async () => (await stack.panel.request('/api/logs?source=caddy_access&limit=200', { cookie: stack.admin })).json as any[],
      (r) => ['/unknown-plain', '/unknown-tls'].every((p) => r.some((x) => x.path === p)),
      10_000,
      200,
    )
    expect(rows.find((r) => r.path === '/unknown-plain')).toMatchObject({ status: 404, host_id: null, host_domain: 'nobody.example.test' })
    expect(rows.find((r) => r.path === '/unknown-tls')).toMatchObject({ status: 421, host_id: null, host_domain: 'nobody.example.test' })
    // The dashboard counts every access row by its class: the refusals are 4xx, not 2xx.
    const traffic = (await stack.panel.request('/api/dashboard/traffic', { cookie: stack.admin })).json as any[]
    const sum = (k: string) => traffic.reduce((n, b) => n + b[k], 0)
    const count = (lo: number) => rows.filter((r) => r.status >= lo && r.status < lo + 100).length
    expect([sum('2xx'), sum('3xx'), sum('4xx')]).toEqual([count(200), count(300), count(400)])
    expect(count(400)).toBeGreaterThanOrEqual(3) // the upstream's 404, the LAN gate's 403, and these two
  })
})
