import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, registerTestSecret, startPanel, type PanelHandle, type PanelResponse } from '../support/panel'
import { makeTempDir } from '../support/processes'

// Throttling that cannot be turned against the owner (issue 33, item 6), on the
// built panel: password failures count per (account, source) and per source with
// a doubling wait instead of a lock, the check and the record are atomic, and
// invalid API tokens never stop a valid one. Sources are visitors behind a proxy
// the panel trusts (127.0.0.1, where the test connects from): each request names
// its visitor in X-Forwarded-For. Waits pass by moving the panel's auth clock
// (PANEL_TEST_CLOCK_OFFSET_FILE), never by sleeping.

const VIEWER = { email: 'throttle.viewer@example.test', password: 'throttle-viewer-password-1' }
const OTHER = { email: 'throttle.other@example.test', password: 'throttle-other-password-1' }
registerTestSecret(VIEWER.password, OTHER.password)

let panel: PanelHandle
let admin: string
let clockFile: string
let offsetMs = 0

/** Moves the panel's auth clock forward (the backoff's waits pass without sleeping). */
function advance(seconds: number) {
  offsetMs += seconds * 1000
  writeFileSync(clockFile, String(offsetMs))
}

const login = (from: string, email: string, password: string) =>
  panel.request('/api/auth/login', { method: 'POST', body: { email, password }, headers: { 'x-forwarded-for': from } })
const wrong = (from: string, email: string) => login(from, email, 'never-the-password-42')
const retryAfter = (res: PanelResponse) => Number(res.headers.get('retry-after'))

beforeAll(async () => {
  clockFile = join(makeTempDir('panel-clock-'), 'offset')
  writeFileSync(clockFile, '0')
  panel = await startPanel({ env: { PANEL_TRUSTED_PROXIES: '127.0.0.1/32', PANEL_TEST_CLOCK_OFFSET_FILE: clockFile } })
  admin = await panel.login()
  for (const u of [VIEWER, OTHER]) {
    const res = await panel.request('/api/users', { method: 'POST', cookie: admin, body: { ...u, role: 'viewer', name: 'Throttled' } })
    expect(res.status, res.text).toBe(201)
  }
})
afterAll(async () => {
  await panel?.stop()
})

describe('passwords: a doubling wait per (account, source) and per source, never a lock the owner cannot lift', () => {
  it("another source's failures never refuse the right password; the failing source waits, then logs in", async () => {
    const attacker = '198.51.100.10'
    for (let i = 0; i < 5; i++) expect((await wrong(attacker, VIEWER.email)).status).toBe(401)
    // The failing source waits, even with the right password: otherwise the wait would not slow guessing.
    const waiting = await login(attacker, VIEWER.email, VIEWER.password)
    expect(waiting.status).toBe(429)
    expect(retryAfter(waiting)).toBeGreaterThan(0)
    expect(retryAfter(waiting)).toBeLessThanOrEqual(15)
    expect(waiting.json.error).toMatch(/too many failed logins for this account from this address: wait \d+ s/)
    // The owner, elsewhere: not affected.
    expect((await login('198.51.100.11', VIEWER.email, VIEWER.password)).status).toBe(200)
    // A wait, not a lock: once it has passed, the right password works from the failing source too.
    advance(retryAfter(waiting))
    expect((await login(attacker, VIEWER.email, VIEWER.password)).status).toBe(200)
    // A success starts that pair's count again.
    expect((await wrong(attacker, VIEWER.email)).status).toBe(401)
  })

  it('each further failure doubles the wait, up to 15 minutes', async () => {
    const from = '198.51.100.20'
    const email = 'doubling-target@example.test'
    for (let i = 0; i < 5; i++) expect((await wrong(from, email)).status).toBe(401)
    const waits: number[] = []
    for (let round = 0; round < 8; round++) {
      const refused = await wrong(from, email)
      expect(refused.status).toBe(429)
      waits.push(retryAfter(refused))
      advance(retryAfter(refused))
      expect((await wrong(from, email)).status).toBe(401)
    }
    // Retry-After is whole seconds, rounded up: a second may already have passed since the failure.
    const expected = [15, 30, 60, 120, 240, 480, 900, 900]
    waits.forEach((w, i) => expect(w, `wait ${i}: ${waits.join(', ')}`).toBeGreaterThanOrEqual(expected[i]! - 1))
    waits.forEach((w, i) => expect(w, `wait ${i}: ${waits.join(', ')}`).toBeLessThanOrEqual(expected[i]!))
  })

  it('20 failures from one source make that source wait, for any account, while other sources log in', async () => {
    const sprayer = '198.51.100.30'
    for (let i = 0; i < 20; i++) expect((await wrong(sprayer, `sprayed-${i}@example.test`)).status).toBe(401)
    const waiting = await login(sprayer, ADMIN.email, ADMIN.password)
    expect(waiting.status).toBe(429)
    expect(waiting.json.error).toMatch(/too many failed logins from this address/)
    expect(retryAfter(waiting)).toBeLessThanOrEqual(15)
    expect((await login('198.51.100.31', ADMIN.email, ADMIN.password)).status).toBe(200)
    advance(retryAfter(waiting))
    expect((await login(sprayer, ADMIN.email, ADMIN.password)).status).toBe(200)
  })

  it('a burst of concurrent wrong passwords evaluates no more than the limit', async () => {
    const from = '198.51.100.40'
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => login(from, OTHER.email, `burst-wrong-password-${i}`)))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s === 401).length, statuses.join(' ')).toBe(5)
    expect(statuses.filter((s) => s === 429).length, statuses.join(' ')).toBe(20)
    const audited = await panel.db().execute({
      sql: "SELECT count(*) AS n FROM logs WHERE source = 'audit' AND message = 'login_failed' AND remote_ip = ? AND raw LIKE ?",
      args: [from, `%${OTHER.email}%`],
    })
    expect(Number(audited.rows[0]!.n)).toBe(5)
    // The owner elsewhere is not affected by the burst.
    expect((await login('198.51.100.41', OTHER.email, OTHER.password)).status).toBe(200)
  })
})

describe('API tokens: invalid ones never stop a valid one', () => {
  it('20 invalid tokens from a source: 429 for its further invalid ones; valid tokens from it and from elsewhere work', async () => {
    const created = await panel.request('/api/tokens', { method: 'POST', cookie: admin, body: { name: 'throttle-script', scope: 'read' } })
    expect(created.status, created.text).toBe(201)
    const secret = created.json.secret as string
    registerTestSecret(secret)
    const get = (from: string, token: string) =>
      panel.request('/api/hosts', { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': from } })
    const noisy = '203.0.113.50'
    for (let i = 0; i < 20; i++) expect((await get(noisy, `ept_invalid${i}`)).status).toBe(401)
    const refused = await get(noisy, 'ept_invalid-again')
    expect(refused.status).toBe(429)
    expect(retryAfter(refused)).toBeGreaterThan(0)
    expect((await get(noisy, secret)).status).toBe(200)
    expect((await get('203.0.113.51', secret)).status).toBe(200)
    // Another source's invalid tokens are its own: 401, not 429.
    expect((await get('203.0.113.51', 'ept_invalid-elsewhere')).status).toBe(401)
  })
})

describe('client addresses in the health answer', () => {
  it('with PANEL_TRUSTED_PROXIES set, forwarded requests raise no warning', async () => {
    const res = await panel.request('/api/system/health', { cookie: admin, headers: { 'x-forwarded-for': '198.51.100.60' } })
    expect(res.status).toBe(200)
    expect(res.json.client_addresses).toEqual({ trusted_proxies: ['127.0.0.1/32'], forwarded_by: null, warning: null })
  })
})
