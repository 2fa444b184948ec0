import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { eventually, httpRequest } from '../support/http'
import { freePort } from '../support/ports'
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
  ruleId = (await stack.panel.request(`/api/hosts/${hostId}/rules`, { method: 'POST', cookie: stack.admin, body: { path: '/broken/*', action: 'proxy', target_group_id: dead.id } })).json.id
  await createHost(stack, { domain: 'lan-logs.example.test', target_group_id: group.id, lan_only: true })
})
afterAll(async () => { await stack?.stop(); await ns?.destroy(); await up?.stop() })

describe('access and error rows from the real Caddy', () => {
  it('records 2xx, 404, 5xx from a failing upstream and a LAN-only 403, with host, rule and client', async () => {
    const through = (path: string) => httpRequest({ port: stack.httpPort, host: 'logs.example.test', path, headers: { 'user-agent': 'logs-test/1.0' } })
    expect((await through('/ok')).status).toBe(200)
    up.setFailing(404)
    expect((await through('/not-here')).status).toBe(404)
    up.setFailing(null)
    expect((await through('/broken/x')).status).toBe(502)
    expect((await ns.curl(`http://198.51.100.1:${stack.httpPort}/private`, ['-H', 'Host: lan-logs.example.test'])).status).toBe(403)

    const rows = await eventually(
      async () => (await stack.panel.request('/api/logs?source=caddy_access&limit=50', { cookie: stack.admin })).json as any[],
      (r) => ['/ok', '/not-here', '/broken/x', '/private'].every((p) => r.some((x) => x.path === p)), 10_000, 200)
    const by = (p: string) => rows.find((r) => r.path === p)
    expect(by('/ok')).toMatchObject({ host_id: hostId, host_domain: 'logs.example.test', rule_id: null, status: 200, method: 'GET', remote_ip: '127.0.0.1', user_agent: 'logs-test/1.0', country: 'LAN' })
    expect(by('/ok').duration).toBeGreaterThan(0)
    expect(by('/not-here')).toMatchObject({ status: 404, host_id: hostId })
    expect(by('/broken/x')).toMatchObject({ status: 502, rule_id: ruleId, level: 'error' })
    expect(by('/private')).toMatchObject({ status: 403, remote_ip: '198.51.100.10', host_domain: 'lan-logs.example.test' })
    const errors = await eventually(async () => (await stack.panel.request('/api/logs?source=caddy_error', { cookie: stack.admin })).json as any[], (r) => r.length > 0, 10_000, 200)
    expect(errors[0]).toMatchObject({ status: 502, path: '/broken/x', message: expect.stringMatching(/connection refused|dial/) })
    const stats = (await stack.panel.request(`/api/logs/stats?host_id=${hostId}&source=caddy_access`, { cookie: stack.admin })).json
    expect(stats.by_status_class).toMatchObject({ '2xx': 1, '4xx': 1, '5xx': 1 })
  })
})
