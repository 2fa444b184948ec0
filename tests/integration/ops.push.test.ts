import { createDecipheriv, createECDH, createHmac, createPublicKey, randomBytes, verify } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSecretsBox } from '../../server/utils/core/secrets'
import { eventually } from '../support/http'
import { freePort } from '../support/ports'
import { registerTestSecret, startPanel, TEST_MASTER_KEY, type PanelHandle } from '../support/panel'
import { sessionApi } from '../support/api-client'

// A loopback HTTP server plays the push service (RFC 8030). The test is the
// browser: it generates the subscription's P-256 key pair and auth secret,
// decrypts what the panel sends (RFC 8291 over RFC 8188 aes128gcm) and checks
// the VAPID JWT (RFC 8292) against the public key the panel serves.

interface Pushed {
  path: string
  headers: IncomingMessage['headers']
  body: Buffer
}
let pushed: Pushed[] = []
let service: Server, servicePort: number
let panel: PanelHandle
let cookie: string

/** A browser-side subscription: the key pair stays here, the public parts go to the panel. */
function newBrowserSubscription(path: string) {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  const auth = randomBytes(16)
  return {
    ecdh,
    auth,
    json: {
      endpoint: `http://127.0.0.1:${servicePort}${path}`,
      expirationTime: null,
      keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
    },
  }
}

const hmac = (key: Buffer, data: Buffer) => createHmac('sha256', key).update(data).digest()

/** RFC 8291 §3.4 + RFC 8188 §2: one aes128gcm message decrypted with the subscription's private key. */
function decryptPush(body: Buffer, ecdh: ReturnType<typeof createECDH>, auth: Buffer): string {
  const salt = body.subarray(0, 16)
  const rs = body.readUInt32BE(16)
  const idlen = body[20]!
  const asPublic = body.subarray(21, 21 + idlen)
  const records = body.subarray(21 + idlen)
  expect(idlen).toBe(65)
  expect(records.length).toBeLessThanOrEqual(rs)
  const ecdhSecret = ecdh.computeSecret(asPublic)
  const prkKey = hmac(auth, ecdhSecret)
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ecdh.getPublicKey(), asPublic])
  const ikm = hmac(prkKey, Buffer.concat([keyInfo, Buffer.from([1])]))
  const prk = hmac(salt, ikm)
  const cek = hmac(prk, Buffer.from('Content-Encoding: aes128gcm\0\x01', 'binary')).subarray(0, 16)
  const nonce = hmac(prk, Buffer.from('Content-Encoding: nonce\0\x01', 'binary')).subarray(0, 12)
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(records.subarray(records.length - 16))
  const padded = Buffer.concat([decipher.update(records.subarray(0, records.length - 16)), decipher.final()])
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end--
  expect(padded[end]).toBe(2) // the last record's delimiter
  return padded.subarray(0, end).toString('utf8')
}

/** RFC 8292: `vapid t=<ES256 JWT>, k=<public key>`; the JWT verifies with the served key. */
function checkVapid(header: string | undefined, servedPublicKey: string, audience: string) {
  const m = /^vapid t=([^,]+), k=(.+)$/.exec(header ?? '')
  expect(m, `Authorization: ${header}`).not.toBeNull()
  const [jwt, k] = [m![1]!, m![2]!]
  expect(k).toBe(servedPublicKey)
  const [h, p, sig] = jwt.split('.')
  expect(JSON.parse(Buffer.from(h!, 'base64url').toString())).toMatchObject({ typ: 'JWT', alg: 'ES256' })
  const claims = JSON.parse(Buffer.from(p!, 'base64url').toString())
  expect(claims.aud).toBe(audience)
  expect(claims.exp * 1000).toBeGreaterThan(Date.now())
  expect(claims.sub).toMatch(/^(https:|mailto:)/)
  const point = Buffer.from(servedPublicKey, 'base64url')
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') },
    format: 'jwk',
  })
  expect(verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(sig!, 'base64url'))).toBe(true)
}

beforeAll(async () => {
  servicePort = await freePort()
  service = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      pushed.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) })
      // /gone/... is a subscription the browser dropped: the push service answers 410.
      res.statusCode = req.url?.startsWith('/gone/') ? 410 : 201
      res.end()
    })
  })
  await new Promise<void>((r) => service.listen(servicePort, '127.0.0.1', r))
  panel = await startPanel()
  cookie = await panel.login()
  // The private key is sealed in the database: unsealed here only so that the harness can
  // check that it never appears in a response or in the panel's output.
  const row = (
    await eventually(
      async () => (await panel.db().execute("SELECT value FROM runtime_state WHERE key = 'push.vapid'")).rows,
      (r) => r.length === 1,
      5_000,
      50,
    )
  )[0]
  const stored = JSON.parse(String(row!.value))
  expect(Object.keys(stored).sort()).toEqual(['private_key_sealed', 'public_key'])
  registerTestSecret(createSecretsBox(TEST_MASTER_KEY).open(stored.private_key_sealed, 'runtime_state/push.vapid'))
})
afterAll(async () => {
  await panel?.stop()
  service?.close()
})

const api = sessionApi(() => ({ panel, cookie }))

describe('web push', () => {
  it('serves the VAPID public key generated at first boot (sessions only)', async () => {
    const res = await api('/api/notifications/push/public-key')
    expect(res.status).toBe(200)
    expect(Object.keys(res.json)).toEqual(['public_key'])
    const key = Buffer.from(res.json.public_key, 'base64url')
    expect(key.length).toBe(65)
    expect(key[0]).toBe(4)
    expect((await panel.request('/api/notifications/push/public-key')).status).toBe(401)
  })

  it('delivers an event to a subscribed browser: the payload decrypts with its keys, VAPID verifies; a gone subscription is removed', async () => {
    const publicKey = (await api('/api/notifications/push/public-key')).json.public_key
    const browser = newBrowserSubscription('/push/browser-1')
    registerTestSecret(browser.json.keys.auth)
    const gone = newBrowserSubscription('/gone/browser-2')
    const created = await api('/api/notifications/push/subscriptions', 'POST', browser.json)
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ endpoint_origin: `http://127.0.0.1:${servicePort}`, last_status: null })
    expect(JSON.stringify(created.json)).not.toContain(browser.json.keys.p256dh)
    // The same endpoint again (keys refreshed by the browser): updated, not duplicated.
    const again = await api('/api/notifications/push/subscriptions', 'POST', browser.json)
    expect(again.status).toBe(200)
    expect(again.json.id).toBe(created.json.id)
    const goneSub = (await api('/api/notifications/push/subscriptions', 'POST', gone.json)).json

    const ch = await api('/api/notifications/channels', 'POST', { name: 'browsers', type: 'push', config: {} })
    expect(ch.status).toBe(201)
    await api('/api/notifications/rules', 'POST', {
      name: 'logins to browsers',
      events: ['login_failed'],
      channel_ids: [ch.json.id],
      throttle_seconds: 0,
    })
    pushed = []
    await panel.request('/api/auth/login', { method: 'POST', body: { email: 'intruder@example.test', password: 'wrong-password-1' } })
    const hits = await eventually(
      async () => pushed,
      (p) => p.some((x) => x.path === '/push/browser-1') && p.some((x) => x.path === '/gone/browser-2'),
      10_000,
      100,
    )

    const hit = hits.find((x) => x.path === '/push/browser-1')!
    expect(hit.headers['content-encoding']).toBe('aes128gcm')
    expect(Number(hit.headers.ttl)).toBeGreaterThan(0)
    checkVapid(hit.headers.authorization as string, publicKey, `http://127.0.0.1:${servicePort}`)
    const message = JSON.parse(decryptPush(hit.body, browser.ecdh, browser.auth))
    expect(message).toMatchObject({
      event: 'login_failed',
      title: '[edge panel] login_failed',
      details: { email: 'intruder@example.test', remote_ip: '127.0.0.1' },
    })
    expect(message.body).toMatch(/login_failed/)
    // Encrypted for one subscription only: the other browser's keys do not open it.
    expect(() => decryptPush(hit.body, gone.ecdh, gone.auth)).toThrow()

    const subs = await eventually(
      async () => (await api('/api/notifications/push/subscriptions')).json as any[],
      (l) => l.length === 1,
      5_000,
      100,
    )
    expect(subs.map((s) => s.id)).toEqual([created.json.id])
    expect(subs[0]).toMatchObject({ last_status: 'ok' })
    expect(subs.find((s) => s.id === goneSub.id)).toBeUndefined()
    const audit = await panel
      .db()
      .execute("SELECT message, actor FROM logs WHERE source = 'audit' AND message = 'notification_push_subscription_expired'")
    expect(audit.rows[0]).toMatchObject({ actor: 'system:notifications' })
  })

  it('test send through the push channel; unsubscribing removes the browser', async () => {
    const browser = newBrowserSubscription('/push/browser-3')
    const sub = (await api('/api/notifications/push/subscriptions', 'POST', browser.json)).json
    const ch = (await api('/api/notifications/channels')).json.find((c: any) => c.type === 'push')
    pushed = []
    const test = await api(`/api/notifications/channels/${ch.id}/test`, 'POST')
    expect(test.status).toBe(200)
    const hit = pushed.find((x) => x.path === '/push/browser-3')!
    expect(JSON.parse(decryptPush(hit.body, browser.ecdh, browser.auth))).toMatchObject({
      event: 'test',
      title: '[edge panel] test',
      details: { message: expect.stringMatching(/nothing was changed/) },
    })
    expect((await api(`/api/notifications/push/subscriptions/${sub.id}`, 'DELETE')).status).toBe(204)
    expect((await api(`/api/notifications/push/subscriptions/${sub.id}`, 'DELETE')).status).toBe(404)
    expect((await api('/api/notifications/push/subscriptions')).json.map((s: any) => s.id)).not.toContain(sub.id)
  })

  it.each([
    [{ endpoint: 'not a url', keys: { p256dh: 'x', auth: 'y' } }, /endpoint/],
    [
      {
        endpoint: 'ftp://push.example.test/x',
        keys: { p256dh: createECDH('prime256v1').generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') },
      },
      /endpoint: must be an http\(s\) URL/,
    ],
    [
      {
        endpoint: 'https://push.example.test/x',
        // 0x04 and 64 random bytes: the shape of a point, off the curve (the prefix alone once let one in 256 through).
        keys: {
          p256dh: Buffer.concat([Buffer.from([4]), randomBytes(64)]).toString('base64url'),
          auth: randomBytes(16).toString('base64url'),
        },
      },
      /p256dh: must be an uncompressed P-256 point/,
    ],
    [
      {
        endpoint: 'https://push.example.test/x',
        keys: { p256dh: createECDH('prime256v1').generateKeys().toString('base64url'), auth: randomBytes(8).toString('base64url') },
      },
      /auth: must be 16 bytes/,
    ],
    [{ endpoint: 'https://push.example.test/x' }, /keys/],
  ])('subscription %j is a 400, nothing stored', async (body, message) => {
    const before = (await api('/api/notifications/push/subscriptions')).json.length
    const res = await api('/api/notifications/push/subscriptions', 'POST', body)
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
    expect((await api('/api/notifications/push/subscriptions')).json.length).toBe(before)
  })

  it.each([
    [{ user_ids: ['a'] }, /config.user_ids/],
    [{ user_ids: [999] }, /config.user_ids: user 999 does not exist/],
  ])('a push channel with config %j is a 400, nothing stored', async (config, message) => {
    const before = (await api('/api/notifications/channels')).json.length
    const res = await api('/api/notifications/channels', 'POST', { name: 'x', type: 'push', config })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
    expect((await api('/api/notifications/channels')).json.length).toBe(before)
  })

  it('a push channel limited to users reaches only their browsers', async () => {
    const me = (await api('/api/auth/session')).json
    const userId = me.user.id
    const mine = newBrowserSubscription('/push/mine')
    await api('/api/notifications/push/subscriptions', 'POST', mine.json)
    const ch = await api('/api/notifications/channels', 'POST', { name: 'admin only', type: 'push', config: { user_ids: [userId] } })
    expect(ch.status).toBe(201)
    expect(ch.json.config).toEqual({ user_ids: [userId] })
    // A subscription of nobody in particular (user removed): not in this channel's audience.
    await panel
      .db()
      .execute({ sql: 'UPDATE push_subscriptions SET user_id = NULL WHERE id != (SELECT max(id) FROM push_subscriptions)', args: [] })
    pushed = []
    expect((await api(`/api/notifications/channels/${ch.json.id}/test`, 'POST')).status).toBe(200)
    expect(pushed.map((p) => p.path)).toEqual(['/push/mine'])
  })
})
