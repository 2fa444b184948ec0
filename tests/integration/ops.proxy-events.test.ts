import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { freePort, unusedPort } from '../support/ports'
import { startTestUpstream, type TestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

// cert_renewal_failed and target_unhealthy come from the real Caddy 2.6.2's own
// log lines (tls.obtain, the active health checker), which the generated
// logging writes to the error log the panel ingests. Delivered to a webhook.

let hook: WebhookReceiver
const delivered: Array<{ event: string; details: Record<string, any> }> = []
let stack: ProxyStack
let live: TestUpstream
let deadAddress: string
let refusingCa: string

beforeAll(async () => {
  hook = await startWebhookReceiver({ onRequest: (r) => delivered.push(JSON.parse(r.body)) })
  stack = await startProxyStack()
  live = await startTestUpstream()
  deadAddress = `127.0.0.1:${await unusedPort()}` // nothing listens there
  refusingCa = `https://127.0.0.1:${await freePort()}/dir` // an ACME directory that refuses connections
  const api = (path: string, body: unknown) => stack.panel.request(path, { method: 'POST', cookie: stack.admin, body })
  const ch = (await api('/api/notifications/channels', { name: 'hook', type: 'webhook', config: { url: `${hook.url}/` } })).json
  const rule = await api('/api/notifications/rules', {
    name: 'proxy',
    events: ['cert_renewal_failed', 'target_unhealthy'],
    channel_ids: [ch.id],
    throttle_seconds: 0,
  })
  expect(rule.status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await live?.stop()
  await hook?.close()
})

const of = (event: string) => delivered.filter((d) => d.event === event)

describe('events from the proxy', () => {
  it('target_unhealthy: a dead target of a group fails its active health check; one event while it stays down', async () => {
    const group = await createGroup(stack, {
      name: 'half-dead',
      targets: [{ address: `127.0.0.1:${live.port}` }, { address: deadAddress }],
      health_check: { path: '/health', interval_seconds: 1, expect_status: 200 },
    })
    expect((await createHost(stack, { domain: 'app.example.test', target_group_id: group.id })).status).toBe(201)
    const [event] = await eventually(
      async () => of('target_unhealthy'),
      (e) => e.length > 0,
      20_000,
      200,
    )
    expect(event!.details).toMatchObject({
      target: deadAddress,
      target_groups: ['half-dead'],
      check: 'HTTP request failed',
      error: expect.stringMatching(/connection refused/),
    })
    // The live target answers its checks: never reported.
    expect(of('target_unhealthy').map((e) => e.details.target)).not.toContain(`127.0.0.1:${live.port}`)
    // Several more failed checks of the dead target reach the panel (counted on the target;
    // the log keeps the first of them, ops.health-reality.test.ts) ...
    const failedChecks = async () =>
      Number(
        (await stack.panel.request(`/api/target-groups/${group.id}`, { cookie: stack.admin })).json.health.targets.find(
          (t: any) => t.address === deadAddress,
        ).failed_checks,
      )
    await eventually(failedChecks, (n) => n >= 6, 20_000, 200)
    // ... and they are the same outage: still one event.
    expect(of('target_unhealthy')).toHaveLength(1)
  })

  it('cert_renewal_failed: the ACME directory refuses, Caddy logs that it could not get the certificate', async () => {
    const group = await createGroup(stack, { name: 'web', targets: [{ address: `127.0.0.1:${live.port}` }] })
    const host = await createHost(stack, {
      domain: 'nocert.example.test',
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'http',
      tls_acme_ca_url: refusingCa,
      tls_email: 'ops@example.test',
    })
    expect(host.status).toBe(201)
    const [event] = await eventually(
      async () => of('cert_renewal_failed'),
      (e) => e.length > 0,
      30_000,
      200,
    )
    expect(event!.details).toMatchObject({
      domain: 'nocert.example.test',
      host_id: host.json.id,
      operation: 'obtain',
      error: expect.stringMatching(/connection refused/),
    })
    expect(event!.details.error).toContain(refusingCa)
    // The line is in the logs too, under that host.
    const rows = (await stack.panel.request(`/api/logs?source=caddy_error&host_id=${host.json.id}`, { cookie: stack.admin })).json
    expect(rows.map((r: any) => r.message)).toContain('could not get certificate from issuer')
  })
})
