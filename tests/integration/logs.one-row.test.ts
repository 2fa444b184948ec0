import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, httpRequest } from '../support/http'
import { ADMIN } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// One row per request (docs/logs.md): through the production Caddy with Coraza, a blocked
// request leaves a WAF audit entry, an error line and an access line; the default list shows
// one access row carrying the WAF's verdict, whose detail holds the other two. Audit rows
// carry real levels.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
const logs = async (query: string) => (await stack.panel.request(`/api/logs?${query}`, { cookie: stack.admin })).json as any[]

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const dead = await createGroup(stack, { name: 'dead', targets: [{ address: `127.0.0.1:${await freePort()}` }] })
  const waf = await createHost(stack, {
    domain: 'fold-waf.example.test',
    target_group_id: group.id,
    waf_enabled: true,
    waf_mode: 'blocking',
    bouncer_enabled: false,
  })
  expect(waf.status, waf.text).toBe(201)
  const down = await createHost(stack, { domain: 'fold-down.example.test', target_group_id: dead.id, bouncer_enabled: false })
  expect(down.status, down.text).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe('one row per request', () => {
  it('a request the WAF blocked is one access row with the verdict; the WAF and error rows are one click away', async () => {
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'fold-waf.example.test',
      path: '/fold-blocked?q=%27%20OR%20%271%27%3D%271',
    })
    expect(res.status).toBe(403)
    // The three lines are ingested (in whichever order the files are read), then folded.
    const waf = await eventually(
      () => logs('source=waf_audit&path=/fold-blocked'),
      (r) => r.length === 1 && r[0].request_log_id !== null,
      15_000,
      200,
    )
    const shown = await logs('path=/fold-blocked')
    expect(shown).toHaveLength(1)
    const access = shown[0]
    expect(access).toMatchObject({
      source: 'caddy_access',
      status: 403,
      host_domain: 'fold-waf.example.test',
      waf_rule_id: waf[0].waf_rule_id,
      waf_severity: waf[0].waf_severity,
      waf_anomaly_score: waf[0].waf_anomaly_score,
      request_log_id: null,
    })
    expect(access.waf_rule_id).toBeGreaterThan(0)
    expect(access.waf_anomaly_score).toBeGreaterThan(0)
    expect(waf[0].request_log_id).toBe(access.id)
    // The row's detail: the WAF's audit entry and Caddy's error line of the same request.
    const detail = (await stack.panel.request(`/api/logs/${access.id}`, { cookie: stack.admin })).json
    const folded = await eventually(
      async () => (await stack.panel.request(`/api/logs/${access.id}`, { cookie: stack.admin })).json.folded as any[],
      (f) => f.some((r) => r.source === 'caddy_error'),
      15_000,
      200,
    )
    expect(detail.id).toBe(access.id)
    expect(folded.map((r) => r.source).sort()).toEqual(['caddy_error', 'waf_audit'])
    expect(folded.find((r) => r.source === 'waf_audit').id).toBe(waf[0].id)
    expect(folded.find((r) => r.source === 'caddy_error')).toMatchObject({ status: 403, request_log_id: access.id })
    // The spec's WAF filters find the access row in the default list, and still the WAF row under source=waf_audit.
    expect((await logs(`waf_rule_id=${access.waf_rule_id}&path=/fold-blocked`)).map((r) => r.id)).toEqual([access.id])
    expect((await logs(`waf_severity=${access.waf_severity}&path=/fold-blocked`)).map((r) => r.id)).toEqual([access.id])
    expect((await logs(`source=waf_audit&waf_rule_id=${access.waf_rule_id}&path=/fold-blocked`)).map((r) => r.id)).toEqual([waf[0].id])
    // Still reachable by source: the error row lists under source=caddy_error.
    expect((await logs('source=caddy_error&path=/fold-blocked')).map((r) => r.request_log_id)).toEqual([access.id])
  })

  it("an upstream that refuses: Caddy's error line is folded into the 502 access row", async () => {
    const res = await httpRequest({ port: stack.httpPort, host: 'fold-down.example.test', path: '/fold-down' })
    expect(res.status).toBe(502)
    const errors = await eventually(
      () => logs('source=caddy_error&path=/fold-down'),
      (r) => r.length === 1 && r[0].request_log_id !== null,
      15_000,
      200,
    )
    const shown = await logs('path=/fold-down')
    expect(shown.map((r) => [r.source, r.status])).toEqual([['caddy_access', 502]])
    expect(errors[0].request_log_id).toBe(shown[0].id)
    expect(shown[0].waf_rule_id).toBeNull()
    const detail = (await stack.panel.request(`/api/logs/${shown[0].id}`, { cookie: stack.admin })).json
    expect(detail.folded.map((r: any) => [r.source, r.message])).toEqual([['caddy_error', expect.stringMatching(/dial|refused/)]])
  })

  it('a failed login is an audit row of level warn, found by the level filter; a successful one stays info', async () => {
    const bad = await stack.panel.request('/api/auth/login', { method: 'POST', body: { email: ADMIN.email, password: 'not-the-password' } })
    expect(bad.status).toBe(401)
    const rows = await logs('source=audit&level=warn')
    expect(rows.map((r) => [r.message, r.level])).toContainEqual(['login_failed', 'warn'])
    const info = await logs('source=audit&level=info')
    expect(info.some((r) => r.message === 'login_failed')).toBe(false)
    expect(info.some((r) => r.message === 'login')).toBe(true)
  })
})
