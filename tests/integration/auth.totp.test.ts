import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateHOTP } from '@oslojs/otp'
import { decodeBase32IgnorePadding } from '@oslojs/encoding'
import { registerTestSecret, sessionCookieOf, startPanel, type PanelHandle, type PanelResponse } from '../support/panel'
import { makeTempDir } from '../support/processes'
import { eventually } from '../support/http'

// TOTP end to end on the built panel: enrolment, the pending login step,
// wrong, right and replayed codes, the ±1 step window, recovery codes, the
// throttle, and the sweep of attempt rows. The panel's auth clock is moved
// through PANEL_TEST_CLOCK_OFFSET_FILE, so that steps change without waiting.

const PASSWORD = 'totp-user-password-1'
registerTestSecret(PASSWORD)

let panel: PanelHandle
let admin: string
let clockFile: string
const env = () => ({ PANEL_TEST_CLOCK_OFFSET_FILE: clockFile })

const STEP_MS = 30_000
const BASE_STEP = Math.floor(Date.now() / STEP_MS)

/** Puts the panel's clock in the middle of `step`: 15 s of slack before the next one. */
function moveToStep(step: number) {
  writeFileSync(clockFile, String(step * STEP_MS + STEP_MS / 2 - Date.now()))
}
function codeAt(secret: string, step: number) {
  return generateHOTP(decodeBase32IgnorePadding(secret), BigInt(step), 6)
}

beforeAll(async () => {
  clockFile = join(makeTempDir('panel-clock-'), 'offset')
  writeFileSync(clockFile, '0')
  panel = await startPanel({ env: env() })
  admin = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

const api = (path: string, method = 'GET', body?: unknown, cookie?: string) => panel.request(path, { method, body, cookie })
const pendingCookieOf = (res: PanelResponse) => {
  const raw = res.headers.getSetCookie().find((c) => c.startsWith('panel_totp_pending='))
  return raw ? { pair: raw.split(';')[0]!, raw } : undefined
}

interface Enrolled {
  email: string
  secret: string
  cookie: string
  recoveryCodes: string[]
  step: number
}

/** A new local user with TOTP enabled at `step` (the code of that step is used up by the enrolment). */
async function enrolledUser(name: string, step: number): Promise<Enrolled> {
  const email = `${name}@example.test`
  expect((await api('/api/users', 'POST', { email, password: PASSWORD, role: 'viewer' }, admin)).status).toBe(201)
  const cookie = await panel.login(email, PASSWORD)
  const setup = await api('/api/auth/totp/setup', 'POST', {}, cookie)
  expect(setup.status).toBe(200)
  const secret: string = setup.json.secret
  registerTestSecret(secret) // from here on, no response or log line may contain it
  moveToStep(step)
  const enabled = await api('/api/auth/totp/enable', 'POST', { code: codeAt(secret, step) }, cookie)
  expect(enabled.status).toBe(200)
  for (const c of enabled.json.recovery_codes) registerTestSecret(c)
  return { email, secret, cookie: sessionCookieOf(enabled)!, recoveryCodes: enabled.json.recovery_codes, step }
}

async function pendingLogin(email: string): Promise<string> {
  const res = await api('/api/auth/login', 'POST', { email, password: PASSWORD })
  expect(res.status).toBe(200)
  expect(res.json).toEqual({ totp_pending: true })
  expect(sessionCookieOf(res)).toBeUndefined()
  return pendingCookieOf(res)!.pair
}

const submitCode = (pending: string | undefined, code: string) =>
  panel.request('/api/auth/login/totp', { method: 'POST', body: { code }, cookie: pending })

describe('enrolment', () => {
  it('setup gives a secret and an otpauth URI, sealed at rest; enable needs a valid code, returns recovery codes and rotates the session', async () => {
    const email = 'enrol@example.test'
    expect((await api('/api/users', 'POST', { email, password: PASSWORD, role: 'viewer' }, admin)).status).toBe(201)
    const cookie = await panel.login(email, PASSWORD)
    const setup = await api('/api/auth/totp/setup', 'POST', {}, cookie)
    expect(setup.status).toBe(200)
    const secret: string = setup.json.secret
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const uri = new URL(setup.json.otpauth_uri)
    expect(uri.protocol).toBe('otpauth:')
    expect(uri.searchParams.get('secret')).toBe(secret)
    expect(uri.searchParams.get('period')).toBe('30')
    expect(uri.searchParams.get('digits')).toBe('6')
    expect(decodeURIComponent(uri.pathname)).toContain(email)
    registerTestSecret(secret)
    const stored = String(
      (await panel.db().execute({ sql: 'SELECT totp_secret FROM users WHERE email = ?', args: [email] })).rows[0]!.totp_secret,
    )
    expect(stored).toMatch(/^v1\./)
    expect(stored).not.toContain(secret)
    // Not active yet: the password alone still logs in.
    expect((await api('/api/auth/session', 'GET', undefined, cookie)).json.user.totp_enabled).toBe(false)
    expect(sessionCookieOf(await api('/api/auth/login', 'POST', { email, password: PASSWORD }))).toBeTruthy()

    moveToStep(BASE_STEP)
    const wrong = await api('/api/auth/totp/enable', 'POST', { code: codeAt(secret, BASE_STEP + 5) }, cookie)
    expect(wrong.status).toBe(400)
    expect(wrong.json.error).toMatch(/code: does not match/)
    const enabled = await api('/api/auth/totp/enable', 'POST', { code: codeAt(secret, BASE_STEP) }, cookie)
    expect(enabled.status).toBe(200)
    expect(enabled.json.totp_enabled).toBe(true)
    expect(enabled.json.recovery_codes).toHaveLength(10)
    for (const c of enabled.json.recovery_codes) {
      expect(c).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/)
      registerTestSecret(c)
    }
    expect(new Set(enabled.json.recovery_codes).size).toBe(10)
    // Only hashes are stored.
    const hashes = (await panel.db().execute('SELECT code_hash FROM totp_recovery_codes')).rows.map((r) => String(r.code_hash))
    for (const c of enabled.json.recovery_codes) expect(hashes.join()).not.toContain(c.replace(/-/g, ''))
    // Privilege change: the old session is gone, the new cookie works.
    const fresh = sessionCookieOf(enabled)!
    expect(fresh).not.toBe(cookie)
    expect((await api('/api/auth/session', 'GET', undefined, cookie)).status).toBe(401)
    expect((await api('/api/auth/session', 'GET', undefined, fresh)).json.user.totp_enabled).toBe(true)
    expect((await api('/api/auth/totp/setup', 'POST', {}, fresh)).status).toBe(409)
    const attempts = await panel
      .db()
      .execute("SELECT success FROM totp_attempts WHERE user_id = (SELECT id FROM users WHERE email = 'enrol@example.test') ORDER BY id")
    expect(attempts.rows.map((r) => Number(r.success))).toEqual([0, 1])
    const audit = (await panel.db().execute("SELECT message FROM logs WHERE source = 'audit' AND message LIKE 'totp_%'")).rows.map(
      (r) => r.message,
    )
    expect(audit).toEqual(expect.arrayContaining(['totp_setup', 'totp_enable_failed', 'totp_enable']))
  })
})

describe('login with TOTP', () => {
  it('answers totp_pending with a short-lived cookie; wrong and replayed codes are refused, the next code logs in', async () => {
    const u = await enrolledUser('pending', BASE_STEP + 20)
    const res = await api('/api/auth/login', 'POST', { email: u.email, password: PASSWORD })
    expect(res.json).toEqual({ totp_pending: true })
    const pending = pendingCookieOf(res)!
    expect(pending.raw).toMatch(/HttpOnly/)
    expect(pending.raw).toMatch(/Path=\/api\/auth\/login/)
    expect(pending.raw).toMatch(/Max-Age=300/)
    expect(pending.raw).toMatch(/SameSite=Strict/)
    expect(pending.raw).not.toMatch(/Domain=/)

    expect((await submitCode(undefined, codeAt(u.secret, u.step + 1))).status).toBe(401) // no pending cookie
    const wrong = await submitCode(pending.pair, codeAt(u.secret, u.step + 9))
    expect(wrong.status).toBe(401)
    expect(wrong.json.error).toMatch(/invalid code/)
    expect(sessionCookieOf(wrong)).toBeUndefined()
    // The code the enrolment used: a replay.
    expect((await submitCode(pending.pair, codeAt(u.secret, u.step))).status).toBe(401)
    const ok = await submitCode(pending.pair, codeAt(u.secret, u.step + 1))
    expect(ok.status).toBe(200)
    expect(ok.json.user).toMatchObject({ email: u.email, totp_enabled: true })
    const cookie = sessionCookieOf(ok)!
    expect((await api('/api/auth/session', 'GET', undefined, cookie)).status).toBe(200)
    expect(ok.headers.getSetCookie().join()).toMatch(/panel_totp_pending=;/)
    // The pending cookie is single use.
    expect((await submitCode(pending.pair, codeAt(u.secret, u.step + 1))).status).toBe(401)
    // A new login with the code just used: a replay.
    const again = await pendingLogin(u.email)
    expect((await submitCode(again, codeAt(u.secret, u.step + 1))).status).toBe(401)
    const failed = (await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'login_totp_failed'")).rows
    expect(failed.length).toBeGreaterThanOrEqual(3)
  })

  it('accepts a code one step either side of the clock, not two', async () => {
    const u = await enrolledUser('window', BASE_STEP + 40)
    const now = u.step + 5
    moveToStep(now)
    const p1 = await pendingLogin(u.email)
    expect((await submitCode(p1, codeAt(u.secret, now - 2))).status).toBe(401)
    expect((await submitCode(p1, codeAt(u.secret, now + 2))).status).toBe(401)
    expect((await submitCode(p1, codeAt(u.secret, now - 1))).status).toBe(200)
    const p2 = await pendingLogin(u.email)
    expect((await submitCode(p2, codeAt(u.secret, now + 1))).status).toBe(200)
    // now + 1 was used: the current step's code is older, so it is refused too.
    const p3 = await pendingLogin(u.email)
    expect((await submitCode(p3, codeAt(u.secret, now))).status).toBe(401)
  })

  it('a pending login expires after 5 minutes', async () => {
    const u = await enrolledUser('expiry', BASE_STEP + 60)
    const pending = await pendingLogin(u.email)
    moveToStep(u.step + 11) // 5.5 minutes later
    const res = await submitCode(pending, codeAt(u.secret, u.step + 11))
    expect(res.status).toBe(401)
    expect(res.json.error).toMatch(/expired/)
  })
})

describe('recovery codes', () => {
  it('a recovery code logs in once; another one disables TOTP', async () => {
    const u = await enrolledUser('recovery', BASE_STEP + 80)
    const p1 = await pendingLogin(u.email)
    const ok = await submitCode(p1, u.recoveryCodes[0]!.toUpperCase())
    expect(ok.status).toBe(200)
    expect(sessionCookieOf(ok)).toBeTruthy()
    const login = (await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'login' ORDER BY id DESC LIMIT 1"))
      .rows[0]!
    expect(JSON.parse(String(login.raw))).toMatchObject({ second_factor: 'recovery_code' })
    const p2 = await pendingLogin(u.email)
    expect((await submitCode(p2, u.recoveryCodes[0]!)).status).toBe(401)
    // Recovery codes are not accepted where the device is required.
    expect((await api('/api/auth/totp/recovery-codes', 'POST', { code: u.recoveryCodes[1] }, sessionCookieOf(ok)!)).status).toBe(400)

    const off = await api('/api/auth/totp/disable', 'POST', { code: u.recoveryCodes[2] }, sessionCookieOf(ok)!)
    expect(off.status).toBe(200)
    expect(off.json).toEqual({ totp_enabled: false })
    expect((await api('/api/auth/session', 'GET', undefined, sessionCookieOf(off)!)).json.user.totp_enabled).toBe(false)
    expect(sessionCookieOf(await api('/api/auth/login', 'POST', { email: u.email, password: PASSWORD }))).toBeTruthy()
    const left = await panel.db().execute({
      sql: 'SELECT count(*) AS n FROM totp_recovery_codes WHERE user_id = (SELECT id FROM users WHERE email = ?)',
      args: [u.email],
    })
    expect(Number(left.rows[0]!.n)).toBe(0)
  })
})

describe('throttle and sweep', () => {
  it('five wrong codes answer 429 with Retry-After, even for the right code', async () => {
    const u = await enrolledUser('burst', BASE_STEP + 100)
    const pending = await pendingLogin(u.email)
    for (let i = 0; i < 5; i++) expect((await submitCode(pending, codeAt(u.secret, u.step + 10 + i))).status).toBe(401)
    const blocked = await submitCode(pending, codeAt(u.secret, u.step + 1))
    expect(blocked.status).toBe(429)
    expect(blocked.json.error).toMatch(/too many failed TOTP codes/)
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  it('the sweep drops login and TOTP attempts older than 24 h and expired sessions', async () => {
    const db = panel.db()
    const old = Date.now() - 25 * 3600_000
    for (let i = 0; i < 3; i++) {
      await db.execute({
        sql: "INSERT INTO login_attempts (ts_ms, email, remote_ip, success) VALUES (?, 'old@example.test', '203.0.113.9', 0)",
        args: [old],
      })
      await db.execute({
        sql: "INSERT INTO totp_attempts (ts_ms, user_id, remote_ip, success) VALUES (?, 1, '203.0.113.9', 0)",
        args: [old],
      })
    }
    await db.execute({
      sql: "INSERT INTO sessions (token_hash, user_id, created_at_ms, expires_at_ms, last_seen_at_ms) VALUES ('expired-session-hash', 1, ?, ?, ?)",
      args: [old, old + 1000, old],
    })
    const recentTotp = Number((await db.execute('SELECT count(*) AS n FROM totp_attempts WHERE ts_ms > ?', [old + 3600_000])).rows[0]!.n)
    expect(recentTotp).toBeGreaterThan(0)
    const { dataDir } = panel
    await panel.stop()
    panel = await startPanel({ dataDir, env: env() }) // the sweeps run at every start
    const gone = async () => {
      const c = panel.db()
      const n = async (sql: string) => Number((await c.execute(sql)).rows[0]!.n)
      return {
        login: await n("SELECT count(*) AS n FROM login_attempts WHERE email = 'old@example.test'"),
        totp: await n("SELECT count(*) AS n FROM totp_attempts WHERE remote_ip = '203.0.113.9'"),
        session: await n("SELECT count(*) AS n FROM sessions WHERE token_hash = 'expired-session-hash'"),
      }
    }
    const left = await eventually(gone, (v) => v.login === 0 && v.totp === 0 && v.session === 0, 10_000, 200)
    expect(left).toEqual({ login: 0, totp: 0, session: 0 })
    // Recent rows stay: the throttle window still sees them.
    expect(Number((await panel.db().execute('SELECT count(*) AS n FROM totp_attempts')).rows[0]!.n)).toBe(recentTotp)
    const sweep = await eventually(
      () => panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'auth_sweep' ORDER BY id DESC LIMIT 1"),
      (r) => r.rows.length > 0,
      10_000,
      200,
    )
    expect(JSON.parse(String(sweep.rows[0]!.raw))).toMatchObject({ actor: 'system:auth-sweep', expired_sessions: 1 })
  })
})
