import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sessionApi } from '../support/api-client'
import { generateTsigKey, startBind, type BindHandle } from '../support/bind'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

// The automatic DNS credentials check before a host's first DNS-01 order (issue
// 39 item 3), with the real BIND and the production Caddy's dnscheck module: the
// panel holds a TSIG key BIND does not know, so the check run by the host's
// creation fails at authentication, in words; the failure is a health problem and
// a health_degraded notification to a webhook. Once BIND knows the key, the next
// check passes and the problem is gone. Orders go to a loopback CA where nothing
// listens: only the check is looked at.

const ZONE = 'example.test'
const LABEL = 'RFC 2136 dynamic update (BIND, Knot, PowerDNS)'
const PANEL_KEY = generateTsigKey('acme-key')
// What BIND knows at first: the same key name with another secret, as after a key rotation the panel missed.
const SERVER_KEY = generateTsigKey('acme-key')
registerTestSecret(PANEL_KEY.secret, SERVER_KEY.secret)

let bind: BindHandle
let stack: ProxyStack
let hook: WebhookReceiver
let groupId: number
let closedCa: string
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const namedLog = () => readFileSync(bind.logFile, 'utf8')
const auditChecks = async () =>
  (await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'dns_provider_test' ORDER BY id")).rows.map(
    (r) => JSON.parse(String(r.raw)),
  )
const problems = async () => (await api('/api/dashboard/health')).json.problems as any[]
const dnsProblems = async () => (await problems()).filter((p) => p.kind.startsWith('dns_check'))
const dnsHost = (domain: string) =>
  createHost(stack, {
    domain,
    target_group_id: groupId,
    tls_mode: 'auto',
    tls_challenge: 'dns',
    tls_dns_provider: 'provider_c',
    tls_acme_ca_url: closedCa,
    tls_email: 'ops@example.test',
  })
const degraded = () =>
  hook.received.map((r) => JSON.parse(r.body)).filter((b) => b.event === 'health_degraded' && b.details.component === 'dns provider')

beforeAll(async () => {
  bind = await startBind({ zones: [{ name: ZONE, policy: ['grant acme-key zonesub TXT'] }], keys: [SERVER_KEY] })
  stack = await startProxyStack({ env: { PANEL_DNS_AUTO_CHECK: 'on' } })
  hook = await startWebhookReceiver()
  closedCa = `https://127.0.0.1:${await freePort()}/dir`
  groupId = (await createGroup(stack, { name: 'web', targets: [{ address: '127.0.0.1:9' }] })).id
  const channel = await api('/api/notifications/channels', 'POST', { name: 'hook', type: 'webhook', config: { url: `${hook.url}/` } })
  expect(channel.status).toBe(201)
  const rule = await api('/api/notifications/rules', 'POST', {
    name: 'health',
    events: ['health_degraded'],
    channel_ids: [channel.json.id],
    throttle_seconds: 0,
  })
  expect(rule.status).toBe(201)
  const put = await api('/api/dns-providers/provider_c', 'PUT', {
    enabled: true,
    credentials: { server: bind.address, key_name: PANEL_KEY.name, key_alg: PANEL_KEY.algorithm, key: PANEL_KEY.secret, zone: ZONE },
  })
  expect(put.status).toBe(200)
})
afterAll(async () => {
  await stack?.stop()
  await bind?.stop()
  await hook?.close()
})

describe('the DNS check before the first DNS-01 order of a host (BIND, the production Caddy)', () => {
  let firstId: number

  it('a host created with a key BIND refuses: the check ran, the answer says why, a health problem and a notification', async () => {
    expect((await api('/api/dns-providers/provider_c')).json.last_check).toBeNull()
    const before = namedLog().length
    const created = await dnsHost(`www.${ZONE}`)
    // Saved and pushed all the same: the configuration is one document, and the order fails the same way.
    expect([created.status, created.json.reconcile.status]).toEqual([201, 'applied'])
    firstId = created.json.id
    expect(created.json.dns_check).toEqual({
      provider: 'provider_c',
      state: 'failed',
      text: expect.stringMatching(
        new RegExp(`^DNS provider ${LABEL.replace(/[()]/g, '\\$&')} failed its check at its credentials: authentication refused: `),
      ),
      last_check: {
        at: expect.any(String),
        zone: ZONE,
        host: null,
        record: `_panel-check.${ZONE}`,
        ok: false,
        steps: [{ step: 'authenticate', ok: false, detail: expect.stringMatching(/^authentication refused: rfc2136/) }],
      },
      pending: null,
    })
    expect(created.json.dns_check.text).toMatch(
      /[^.]\. Certificates of its hosts cannot be obtained until this is fixed \(its credentials under DNS providers\)$/,
    )
    // BIND saw the update, signed with a key it could not verify, and wrote nothing.
    expect(namedLog().slice(before)).toMatch(
      /acme-key.*(tsig verify failure|BADSIG|bad signature|invalid signature)|(tsig verify failure|BADSIG).*acme-key/i,
    )
    expect(await bind.txt(`_panel-check.${ZONE}`)).toEqual([])
    // The provider's screen and the host's show the same result.
    expect((await api('/api/dns-providers/provider_c')).json.last_check).toEqual(created.json.dns_check.last_check)
    expect((await api(`/api/hosts/${firstId}/dns-check`)).json).toEqual({ host_id: firstId, ...created.json.dns_check })
    expect((await auditChecks()).at(-1)).toMatchObject({ name: 'provider_c', zone: ZONE, ok: false, failed_step: 'authenticate' })

    expect(await dnsProblems()).toEqual([
      {
        kind: 'dns_check_failed',
        severity: 'error',
        subject: `DNS provider ${LABEL}`,
        text: expect.stringMatching(
          /^its last check failed at its credentials: authentication refused: .*certificates of its hosts cannot be obtained$/,
        ),
        since: created.json.dns_check.last_check.at,
        fix: { to: '/dns-providers#provider-provider_c', text: `DNS provider ${LABEL}` },
      },
    ])
    const sent = await eventually(
      async () => degraded(),
      (d) => d.length >= 1,
      15_000,
      100,
    )
    expect(sent).toEqual([
      {
        event: 'health_degraded',
        at: expect.any(String),
        details: {
          component: 'dns provider',
          provider: 'provider_c',
          zone: ZONE,
          host: null,
          failed_step: 'authenticate',
          detail: expect.stringMatching(/^authentication refused: /),
        },
      },
    ])

    // Saving the host again with the same provider is not a first order: nothing is checked.
    const audits = (await auditChecks()).length
    const again = await api(`/api/hosts/${firstId}`, 'PUT', {
      domain: `www.${ZONE}`,
      target_group_id: groupId,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_c',
      tls_acme_ca_url: closedCa,
      tls_email: 'ops@example.test',
    })
    expect(again.status).toBe(200)
    expect(again.json).not.toHaveProperty('dns_check')
    expect((await auditChecks()).length).toBe(audits)

    const everywhere = [
      JSON.stringify([created.json, again.json, await auditChecks(), await problems()]),
      hook.received.map((r) => r.body).join('\n'),
      readFileSync(stack.caddy.logFile, 'utf8'),
      stack.panel.output(),
    ].join('\n')
    for (const secret of [PANEL_KEY.secret, SERVER_KEY.secret]) expect(everywhere).not.toContain(secret)
  })

  it('once BIND knows the key: the next host checks again and passes, the problem clears, "Check now" passes', async () => {
    await bind.setKeys([PANEL_KEY])
    const before = namedLog().length
    const created = await dnsHost(`api.${ZONE}`)
    expect(created.status).toBe(201)
    expect(created.json.dns_check).toMatchObject({
      provider: 'provider_c',
      state: 'passed',
      last_check: { zone: ZONE, ok: true },
      pending: null,
    })
    expect(created.json.dns_check.last_check.steps.map((s: any) => [s.step, s.ok])).toEqual([
      ['authenticate', true],
      ['write', true],
      ['visible', true],
      ['remove', true],
    ])
    const updates = namedLog().slice(before)
    expect(updates).toMatch(new RegExp(`adding an RR at '_panel-check\\.${ZONE}' TXT`))
    expect(updates).toMatch(new RegExp(`deleting an RR at _panel-check\\.${ZONE} TXT`))
    expect(await dnsProblems()).toEqual([])
    // One notification: the failure, not the recovery.
    expect(degraded().length).toBe(1)

    // A passed check: the next DNS-01 host is not checked again.
    const third = await dnsHost(`static.${ZONE}`)
    expect(third.status).toBe(201)
    expect(third.json).not.toHaveProperty('dns_check')

    const now = await api(`/api/hosts/${firstId}/dns-check`, 'POST')
    expect(now.status).toBe(200)
    expect(now.json).toMatchObject({ host_id: firstId, provider: 'provider_c', state: 'passed', last_check: { ok: true } })
    expect(now.json.last_check.at > created.json.dns_check.last_check.at).toBe(true)
    expect((await auditChecks()).at(-1)).toMatchObject({ name: 'provider_c', zone: ZONE, ok: true, failed_step: null })
  })

  it('a host without the DNS challenge has no check, and the routes say so', async () => {
    const plain = await createHost(stack, { domain: `plain.${ZONE}`, target_group_id: groupId })
    expect(plain.json).not.toHaveProperty('dns_check')
    const refused = await api(`/api/hosts/${plain.json.id}/dns-check`)
    expect([refused.status, refused.json.error]).toEqual([
      400,
      `host ${plain.json.id} does not use the DNS challenge: give it automatic TLS with DNS-01 and a DNS provider first`,
    ])
    expect((await api('/api/hosts/999999/dns-check')).status).toBe(404)
  })

  it("node 1's proxy not answering: the check is a recorded pending state, a warning, and no hang", async () => {
    await stack.caddy.stop()
    const res = await api(`/api/hosts/${firstId}/dns-check`, 'POST')
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      state: 'pending',
      text: expect.stringMatching(
        /^DNS provider .* was not checked: the DNS check needs node 1's proxy: proxy admin API at .* is unreachable/,
      ),
      last_check: { ok: true },
      pending: { zone: ZONE, host: null, cause: expect.stringContaining('unreachable') },
    })
    expect((await api(`/api/hosts/${firstId}/dns-check`)).json.state).toBe('pending')
    expect(await dnsProblems()).toEqual([
      expect.objectContaining({ kind: 'dns_check_pending', severity: 'warning', text: expect.stringMatching(/^not checked: /) }),
    ])
  })
})
