import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

let stack: ProxyStack
let up1: Awaited<ReturnType<typeof startTestUpstream>>
let up2: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up1 = await startTestUpstream()
  up2 = await startTestUpstream()
  stack = await startProxyStack()
})
afterAll(async () => {
  await stack?.stop()
  await up1?.stop()
  await up2?.stop()
})

const through = (host: string, path = '/', headers: Record<string, string> = {}) =>
  httpRequest({ port: stack.httpPort, host, path, headers })

describe('a host over a target group, through the real Caddy', () => {
  it('is served after create, not after toggle-off, again after toggle-on, and not after delete', async () => {
    const group = await createGroup(stack, { name: 'one', targets: [{ address: `127.0.0.1:${up1.port}` }] })
    const res = await createHost(stack, { domain: 'app.example.test', target_group_id: group.id })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({ domain: 'app.example.test', enabled: true, reconcile: { status: 'applied' } })
    const id = res.json.id

    const served = await through('app.example.test', '/hello')
    expect(served.status).toBe(200)
    expect(JSON.parse(served.body)).toMatchObject({ upstream: up1.port, url: '/hello' })
    expect(up1.requests.at(-1)!.url).toBe('/hello')

    const off = await stack.panel.request(`/api/hosts/${id}/toggle`, { method: 'POST', cookie: stack.admin })
    expect(off.json.enabled).toBe(false)
    // Caddy answers an empty 200 for a host it does not know: what matters is that the upstream sees nothing.
    const before = up1.requests.length
    expect((await through('app.example.test', '/after-off')).body).not.toContain('upstream')
    expect(up1.requests.length).toBe(before)

    const on = await stack.panel.request(`/api/hosts/${id}/toggle`, { method: 'POST', cookie: stack.admin })
    expect(on.json.enabled).toBe(true)
    expect((await through('app.example.test')).status).toBe(200)

    expect((await stack.panel.request(`/api/hosts/${id}`, { method: 'DELETE', cookie: stack.admin })).status).toBe(204)
    expect((await stack.panel.request(`/api/hosts/${id}`, { cookie: stack.admin })).status).toBe(404)
    const n = up1.requests.length
    expect((await through('app.example.test', '/after-delete')).body).not.toContain('upstream')
    expect(up1.requests.length).toBe(n)
  })

  it('spreads requests over two targets round-robin, and stops sending to a target whose health check fails', async () => {
    const group = await createGroup(stack, {
      name: 'pair',
      lb_policy: 'round_robin',
      targets: [{ address: `127.0.0.1:${up1.port}` }, { address: `127.0.0.1:${up2.port}` }],
      health_check: { path: '/', interval_seconds: 1, expect_status: 200 },
    })
    expect((await createHost(stack, { domain: 'rr.example.test', target_group_id: group.id })).status).toBe(201)
    const seen = new Set<number>()
    for (let i = 0; i < 10; i++) {
      const r = await through('rr.example.test', `/rr-${i}`)
      expect(r.status).toBe(200)
      seen.add(JSON.parse(r.body).upstream)
    }
    expect(seen).toEqual(new Set([up1.port, up2.port]))

    // The second target keeps listening but answers 503: only the health check can take it out.
    const checks = () => up2.requests.filter((q) => q.url === '/').length
    const checksBefore = checks()
    up2.setFailing(503)
    try {
      // Two health checks answered 503 after the change: the checks of one upstream run one per
      // interval, so the first one's result (down) was recorded before the second started.
      await eventually(
        async () => checks(),
        (n) => n >= checksBefore + 2,
        15_000,
        100,
      )
      for (let i = 0; i < 10; i++) {
        const r = await through('rr.example.test', `/after-down-${i}`)
        expect(r.status).toBe(200)
        expect(JSON.parse(r.body).upstream).toBe(up1.port)
      }
      expect(up2.requests.filter((q) => q.url.startsWith('/after-down')).length).toBe(0)
      expect(up2.requests.filter((q) => q.url === '/').length).toBeGreaterThan(0) // the health checks did reach it
    } finally {
      up2.setFailing(null)
    }
  })

  it('routes a rule to its own group and tags the route with the rule id', async () => {
    const main = await createGroup(stack, { name: 'main', targets: [{ address: `127.0.0.1:${up1.port}` }] })
    const api = await createGroup(stack, { name: 'api', targets: [{ address: `127.0.0.1:${up2.port}` }] })
    const host = (await createHost(stack, { domain: 'rules.example.test', target_group_id: main.id })).json
    const rule = await stack.panel.request(`/api/hosts/${host.id}/rules`, {
      method: 'POST',
      cookie: stack.admin,
      body: { path: '/api/*', action: 'proxy', target_group_id: api.id, priority: 10 },
    })
    expect(rule.status).toBe(201)
    const teapot = await stack.panel.request(`/api/hosts/${host.id}/rules`, {
      method: 'POST',
      cookie: stack.admin,
      body: { path: '/teapot', action: 'respond', respond_status: 418, respond_body: 'short and stout' },
    })
    expect(teapot.status).toBe(201)
    up2.setResponseHeader('X-Panel-Rule-Id', '999') // an upstream cannot forge the tag
    const viaRule = await through('rules.example.test', '/api/users')
    expect(JSON.parse(viaRule.body).upstream).toBe(up2.port)
    expect(viaRule.headers['x-panel-rule-id']).toBe(String(rule.json.id))
    up1.setResponseHeader('X-Panel-Rule-Id', '999')
    const viaDefault = await through('rules.example.test', '/web')
    expect(JSON.parse(viaDefault.body).upstream).toBe(up1.port)
    expect(viaDefault.headers['x-panel-rule-id']).toBeUndefined()
    up1.setResponseHeader('X-Panel-Rule-Id', null)
    up2.setResponseHeader('X-Panel-Rule-Id', null)
    // Caddy's access log carries the host's logger name and the rule id.
    const lines = await eventually(
      async () =>
        readFileSync(join(stack.logDir, 'access.log'), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
      (ls) => ls.some((l: any) => l.request?.uri === '/web'),
      5_000,
    )
    const ruleLine = lines.find((l: any) => l.request.uri === '/api/users')
    expect(ruleLine.logger).toBe(`http.log.access.host_${host.id}`)
    expect(ruleLine.resp_headers['X-Panel-Rule-Id']).toEqual([String(rule.json.id)])
    const defaultLine = lines.find((l: any) => l.request.uri === '/web')
    expect(defaultLine.resp_headers['X-Panel-Rule-Id']).toBeUndefined()
    const t = await through('rules.example.test', '/teapot')
    expect(t.status).toBe(418)
    expect(t.body).toBe('short and stout')
    // The group used by a rule cannot be deleted.
    const del = await stack.panel.request(`/api/target-groups/${api.id}`, { method: 'DELETE', cookie: stack.admin })
    expect(del.status).toBe(409)
    expect(del.json.error).toMatch(/used by rule/)
  })

  it('a group in use by a host cannot be deleted (409)', async () => {
    const g = await createGroup(stack, { name: 'busy', targets: [{ address: `127.0.0.1:${up1.port}` }] })
    await createHost(stack, { domain: 'busy.example.test', target_group_id: g.id })
    const del = await stack.panel.request(`/api/target-groups/${g.id}`, { method: 'DELETE', cookie: stack.admin })
    expect(del.status).toBe(409)
    expect(del.json.error).toMatch(/used by host/)
  })

  it('records the reconcile in health and writes an audit row for each push', async () => {
    const health = await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })
    expect(health.json.proxy).toMatchObject({ reachable: true, last_reconcile_status: 'ok' })
    expect(Date.parse(health.json.proxy.last_reconcile_at)).toBeGreaterThan(Date.now() - 60_000)
    const sys = await stack.panel.request('/api/system/health', { cookie: stack.admin })
    expect(sys.json.proxy.last_reconcile_status).toBe('ok')
    const audits = await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source='audit' AND message='proxy_reconcile'")
    expect(Number(audits.rows[0]!.n)).toBeGreaterThan(3)
  })
})
