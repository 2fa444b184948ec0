import { createHmac } from 'node:crypto'
import { SMTPServer } from 'smtp-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { freePort } from '../support/ports'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { sessionApi } from '../support/api-client'
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver'

const HOOK_SECRET = 'hook-SECRET-123456'
const SMTP_PASSWORD = 'smtp-SECRET-pass'
const TG_TOKEN = '12345:tg-SECRET-token'
registerTestSecret(HOOK_SECRET, SMTP_PASSWORD, TG_TOKEN)

let received: ReceivedRequest[] = []
let slowMs = 0
let http: WebhookReceiver
let smtp: SMTPServer, smtpPort: number
const mails: Array<{ to: string[]; raw: string; user?: string }> = []
let panel: PanelHandle
let cookie: string

beforeAll(async () => {
  http = await startWebhookReceiver({
    onRequest: (r) => received.push(r),
    respond: (r) => (r.path === '/fail' ? { status: 500, body: '', delayMs: slowMs } : { delayMs: slowMs }),
  })
  smtpPort = await freePort()
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _s, cb) {
      cb(null, { user: auth.username })
    },
    onData(stream, session, cb) {
      let raw = ''
      stream.on('data', (c) => {
        raw += c
      })
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, user: session.user as string | undefined })
        cb()
      })
    },
  })
  await new Promise<void>((r) => smtp.listen(smtpPort, '127.0.0.1', r))
  panel = await startPanel({ env: { PANEL_NOTIFICATION_QUEUE_CAPACITY: '3' } })
  cookie = await panel.login()
  await panel.request('/api/settings', {
    method: 'PUT',
    cookie,
    body: {
      'smtp.host': '127.0.0.1',
      'smtp.port': smtpPort,
      'smtp.username': 'mailer',
      'smtp.password': SMTP_PASSWORD,
      'smtp.from': 'panel@example.test',
    },
  })
})
afterAll(async () => {
  await panel?.stop()
  await http?.close()
  smtp?.close()
})

const api = sessionApi(() => ({ panel, cookie }))
async function channel(body: Record<string, unknown>) {
  const res = await api('/api/notifications/channels', 'POST', body)
  expect(res.status).toBe(201)
  return res.json
}
const failLogin = () =>
  panel.request('/api/auth/login', { method: 'POST', body: { email: `nobody${Math.random()}@example.test`, password: 'wrong-password-1' } })

describe('channels deliver to real receivers', () => {
  it('webhook: JSON body with an HMAC-SHA256 signature; the secret is never returned', async () => {
    const ch = await channel({ name: 'hook', type: 'webhook', config: { url: `${http.url}/hook`, secret: HOOK_SECRET } })
    expect(ch.config).toEqual({ url: `${http.url}/hook`, secret: '__SET__' })
    await api('/api/notifications/rules', 'POST', { name: 'logins', events: ['login_failed'], channel_ids: [ch.id], throttle_seconds: 0 })
    received = []
    await failLogin()
    const [hit] = await eventually(
      async () => received.filter((r) => r.path === '/hook'),
      (r) => r.length === 1,
      5_000,
      100,
    )
    const body = JSON.parse(hit!.body)
    expect(body).toMatchObject({ event: 'login_failed', details: { remote_ip: '127.0.0.1' } })
    expect(hit!.headers['x-panel-signature']).toBe(`sha256=${createHmac('sha256', HOOK_SECRET).update(hit!.body).digest('hex')}`)
    const listed = (await api('/api/notifications/channels')).json.find((c: any) => c.id === ch.id)
    expect(listed).toMatchObject({ last_status: 'ok' })
  })

  it('email: through the SMTP server with the stored credentials, recipients, subject and body', async () => {
    const ch = await channel({ name: 'mail', type: 'email', config: { to: ['ops@example.test', 'oncall@example.test'] } })
    const test = await api(`/api/notifications/channels/${ch.id}/test`, 'POST')
    expect(test.status).toBe(200)
    const mail = await eventually(
      async () => mails.at(-1),
      (m) => !!m,
      5_000,
      100,
    )
    expect(mail!.to).toEqual(['ops@example.test', 'oncall@example.test'])
    expect(mail!.user).toBe('mailer')
    // The Test button's message is its own event: a mail filter on config_change must not take it for a change.
    expect(mail!.raw).toMatch(/Subject: \[edge panel\] test/)
    expect(mail!.raw).not.toContain('config_change')
    // The body is quoted-printable: its soft line breaks (=CRLF) joined again.
    expect(mail!.raw.replace(/=\r\n/g, '')).toContain('this channel works; nothing was changed')
    expect(panel.output()).not.toContain(SMTP_PASSWORD)
  })

  it('chat: slack, discord and telegram shapes', async () => {
    received = []
    const slack = await channel({
      name: 'slack',
      type: 'chat',
      config: { flavor: 'slack', webhook_url: `${http.url}/slack` },
    })
    const discord = await channel({
      name: 'discord',
      type: 'chat',
      config: { flavor: 'discord', webhook_url: `${http.url}/discord` },
    })
    const tg = await channel({
      name: 'tg',
      type: 'chat',
      config: { flavor: 'telegram', bot_token: TG_TOKEN, chat_id: '42', api_base: `${http.url}` },
    })
    expect(slack.config.webhook_url).toBe('__SET__')
    for (const c of [slack, discord, tg]) expect((await api(`/api/notifications/channels/${c.id}/test`, 'POST')).status).toBe(200)
    const isTest = /^\[edge panel\] test at .*this channel works; nothing was changed/
    expect(JSON.parse(received.find((r) => r.path === '/slack')!.body).text).toMatch(isTest)
    expect(JSON.parse(received.find((r) => r.path === '/discord')!.body).content).toMatch(isTest)
    const t = received.find((r) => r.path === `/bot${TG_TOKEN}/sendMessage`)!
    expect(JSON.parse(t.body)).toMatchObject({ chat_id: '42', text: expect.stringMatching(isTest) })
    for (const r of received) expect(r.body).not.toContain('config_change')
  })

  it('webhook: the Test button sends event "test" (body and X-Panel-Event), never config_change; a rule cannot choose it', async () => {
    const ch = await channel({ name: 'test-hook', type: 'webhook', config: { url: `${http.url}/test-hook`, secret: HOOK_SECRET } })
    received = []
    expect((await api(`/api/notifications/channels/${ch.id}/test`, 'POST')).status).toBe(200)
    const hit = received.find((r) => r.path === '/test-hook')!
    expect(hit.headers['x-panel-event']).toBe('test')
    expect(JSON.parse(hit.body)).toMatchObject({ event: 'test', details: { message: expect.stringMatching(/nothing was changed/) } })
    expect(hit.body).not.toContain('config_change')
    expect(hit.headers['x-panel-signature']).toBe(`sha256=${createHmac('sha256', HOOK_SECRET).update(hit.body).digest('hex')}`)
    const rule = await api('/api/notifications/rules', 'POST', { name: 'tests', events: ['test'], channel_ids: [ch.id] })
    expect(rule.status).toBe(400)
    expect(rule.json.error).toMatch(/only sent by a channel's Test button/)
  })

  it('a failing receiver is reported by the test send, without the secret', async () => {
    const bad = await channel({ name: 'bad', type: 'chat', config: { flavor: 'slack', webhook_url: `${http.url}/fail` } })
    const res = await api(`/api/notifications/channels/${bad.id}/test`, 'POST')
    expect(res.status).toBe(502)
    expect(res.json.error).toMatch(/test delivery failed: answered 500/)
    expect((await api('/api/notifications/channels')).json.find((c: any) => c.id === bad.id)).toMatchObject({ last_status: 'failed' })
  })
})

describe('rules, throttles and the queue', () => {
  it('throttle: several events in the window give one delivery; 0 gives every one', async () => {
    const ch = await channel({ name: 'counter', type: 'webhook', config: { url: `${http.url}/counter` } })
    const throttled = await channel({ name: 'throttled', type: 'webhook', config: { url: `${http.url}/throttled` } })
    received = []
    const counted = () => received.filter((r) => r.path === '/counter').length
    // Five config_change events from here on: creating each rule (after its commit, both count) and three
    // settings saves. Each is delivered before the next, so this panel's small queue (3) never overflows.
    await api('/api/notifications/rules', 'POST', { name: 'all', events: ['config_change'], channel_ids: [ch.id], throttle_seconds: 0 })
    await eventually(
      async () => counted(),
      (n) => n >= 1,
      5_000,
      50,
    )
    await api('/api/notifications/rules', 'POST', {
      name: 'once',
      events: ['config_change'],
      channel_ids: [throttled.id],
      throttle_seconds: 3600,
    })
    await eventually(
      async () => counted(),
      (n) => n >= 2,
      5_000,
      50,
    )
    for (let i = 0; i < 3; i++) {
      await api('/api/settings', 'PUT', { 'logs.retention_days': 20 + i })
      await eventually(
        async () => counted(),
        (n) => n >= 3 + i,
        5_000,
        50,
      )
    }
    await new Promise((r) => setTimeout(r, 300))
    expect(received.filter((r) => r.path === '/counter').length).toBe(5)
    expect(received.filter((r) => r.path === '/throttled').length).toBe(1)
  })

  it('a saturated queue drops and counts, and the panel keeps answering', async () => {
    slowMs = 1_000
    const before = (await api('/api/system/health')).json.workers.notification_queue_dropped
    for (let i = 0; i < 8; i++) await api('/api/settings', 'PUT', { 'logs.retention_days': 40 + i })
    const h = (await api('/api/system/health')).json.workers
    expect(h.notification_queue_capacity).toBe(3)
    expect(h.notification_queue_dropped).toBeGreaterThan(before)
    expect((await panel.request('/healthz')).status).toBe(200)
    slowMs = 0
  })

  it.each([
    [{ name: 'x', events: ['no_such_event'], channel_ids: [1] }, /events: "no_such_event" is not an event/],
    [{ name: 'x', events: ['login_failed'], channel_ids: [999] }, /channel 999 does not exist/],
    [{ name: 'x', events: ['login_failed'], channel_ids: [1], throttle_seconds: -1 }, /throttle_seconds/],
  ])('rule %j is a 400', async (body, message) => {
    const res = await api('/api/notifications/rules', 'POST', body)
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
  })

  it.each([
    [{ name: 'x', type: 'webhook', config: { url: 'not a url' } }, /config.url/],
    [{ name: 'x', type: 'chat', config: { flavor: 'telegram' } }, /telegram needs bot_token/],
    [{ name: 'x', type: 'email', config: { to: ['nope'] } }, /config.to/],
    [{ name: 'x', type: 'push', config: { endpoint: 'https://push.example.test' } }, /config: unknown field "endpoint"/],
  ])('channel %j is a 400', async (body, message) => {
    const res = await api('/api/notifications/channels', 'POST', body)
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
  })
})
