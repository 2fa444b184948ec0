import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestPki } from '../support/certs'
import { eventually } from '../support/http'
import { makeTempDir } from '../support/processes'
import { startPanel, type PanelHandle } from '../support/panel'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

// Events the panel derives from what it observes, delivered to a real webhook receiver.
let hook: WebhookReceiver
const events: string[] = []
let panel: PanelHandle, cookie: string, logDir: string

beforeAll(async () => {
  hook = await startWebhookReceiver({ onRequest: (r) => events.push(JSON.parse(r.body).event) })
  logDir = makeTempDir('alerts-logs-')
  panel = await startPanel({ env: { PROXY_LOG_DIR: logDir } })
  cookie = await panel.login()
  const ch = (
    await panel.request('/api/notifications/channels', {
      method: 'POST',
      cookie,
      body: { name: 'hook', type: 'webhook', config: { url: `${hook.url}/` } },
    })
  ).json
  const rule = await panel.request('/api/notifications/rules', {
    method: 'POST',
    cookie,
    body: {
      name: 'watch',
      events: ['waf_attack_burst', 'rate_limit_triggered', 'manual_cert_expiring_soon'],
      channel_ids: [ch.id],
      throttle_seconds: 0,
    },
  })
  expect(rule.status).toBe(201)
})
afterAll(async () => {
  await panel?.stop()
  await hook?.close()
})

describe('derived events', () => {
  it('a burst of WAF matches and rate-limited requests in the logs become events', async () => {
    const now = Date.now()
    const waf = (i: number) =>
      `${JSON.stringify({
        transaction: {
          unix_timestamp: (now + i) * 1e6,
          client_ip: '198.51.100.9',
          server_id: 'a.example.test',
          request: { method: 'GET', uri: `/?id=${i}` },
          response: { status: 403 },
          is_interrupted: true,
        },
        messages: [{ message: 'x', data: { id: 942100, severity: 2, msg: 'SQLi' } }],
      })}\n`
    appendFileSync(join(logDir, 'waf-audit.log'), Array.from({ length: 12 }, (_, i) => waf(i)).join(''))
    appendFileSync(
      join(logDir, 'access.log'),
      `${JSON.stringify({
        level: 'info',
        ts: now / 1000,
        logger: 'http.log.access',
        msg: 'handled request',
        request: { remote_ip: '198.51.100.9', method: 'GET', host: 'a.example.test', uri: '/' },
        status: 429,
      })}\n`,
    )
    await eventually(
      async () => events,
      (e) => e.includes('waf_attack_burst') && e.includes('rate_limit_triggered'),
      10_000,
      100,
    )
    expect(events).toContain('waf_attack_burst')
    expect(events).toContain('rate_limit_triggered')
  })

  it('an uploaded certificate close to expiry is announced at start', async () => {
    const pki = createTestPki()
    await panel
      .db()
      .execute(
        "INSERT INTO target_groups (id, name, targets, scheme, lb_policy, created_at, updated_at) VALUES (1, 'g', '[]', 'http', 'round_robin', '', '')",
      )
    const host = await panel.request('/api/hosts', {
      method: 'POST',
      cookie,
      body: { domain: 'soon.example.test', target_group_id: 1, tls_mode: 'none' },
    })
    const leaf = pki.leaf('soon.example.test', { days: 10 })
    const form = new FormData()
    form.append('cert_pem', new Blob([leaf.certPem]), 'c.pem')
    form.append('key_pem', new Blob([leaf.keyPem]), 'k.pem')
    expect(
      (
        await fetch(`${panel.url}/api/manual-certs/${host.json.id}`, {
          method: 'POST',
          headers: { cookie, 'x-panel-request': '1' },
          body: form,
        })
      ).status,
    ).toBe(201)
    await panel.stop()
    panel = await startPanel({ dataDir: panel.dataDir, env: { PROXY_LOG_DIR: logDir } })
    cookie = await panel.login()
    await eventually(
      async () => events,
      (e) => e.includes('manual_cert_expiring_soon'),
      10_000,
      100,
    )
    expect(events).toContain('manual_cert_expiring_soon')
  })
})
