import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, startPanel, type PanelHandle } from '../support/panel'

let panel: PanelHandle
let admin: string
let viewer: string

async function snapshotState() {
  const db = panel.db()
  const users = await db.execute('SELECT id, email, name, role, password_hash FROM users ORDER BY id')
  const settings = await db.execute('SELECT key, value FROM settings ORDER BY key')
  return JSON.stringify([users.rows, settings.rows])
}

function expectError(res: { status: number; json: any; headers: Headers }, status: number, message?: RegExp) {
  expect(res.status).toBe(status)
  expect(res.headers.get('content-type')).toMatch(/application\/json/)
  expect(typeof res.json?.error).toBe('string')
  expect(Object.keys(res.json)).toEqual(['error'])
  if (message) expect(res.json.error).toMatch(message)
}

beforeAll(async () => {
  panel = await startPanel()
  admin = await panel.login()
  await panel.request('/api/users', {
    method: 'POST',
    cookie: admin,
    body: { email: 'viewer@example.test', password: 'viewer-password-1', role: 'viewer' },
  })
  viewer = await panel.login('viewer@example.test', 'viewer-password-1')
})
afterAll(async () => {
  await panel?.stop()
})

describe('routing errors answer {error}', () => {
  it('unknown route: 404', async () => expectError(await panel.request('/api/no-such-thing', { cookie: admin }), 404, /no route/))
  // A GET of an unknown top-level path is a deep link of the web UI (it answers the app, see docs/ui.md).
  it('unknown top-level route: 405 for any other method', async () =>
    expectError(await panel.request('/nowhere', { method: 'POST', cookie: admin }), 405, /not allowed/))
  it('unknown top-level file: 404', async () => expectError(await panel.request('/nowhere.txt'), 404))
  it('wrong method: 405', async () =>
    expectError(await panel.request('/api/setup', { method: 'DELETE', cookie: admin }), 405, /not allowed/))
})

describe('bad bodies change nothing', () => {
  const cases: Array<
    [string, { method: string; path: string; rawBody?: string; body?: unknown; headers?: Record<string, string> }, number, RegExp]
  > = [
    [
      'malformed JSON',
      { method: 'POST', path: '/api/users', rawBody: '{"email": ', headers: { 'content-type': 'application/json' } },
      400,
      /not valid JSON/,
    ],
    [
      'wrong type',
      { method: 'POST', path: '/api/users', body: { email: 'x@example.test', password: 12345678901234, role: 'viewer' } },
      400,
      /password/,
    ],
    [
      'unknown field',
      { method: 'POST', path: '/api/users', body: { email: 'x@example.test', password: 'long-enough-pass', role: 'viewer', admin: true } },
      400,
      /unknown field "admin"/,
    ],
    [
      'over-long name',
      {
        method: 'POST',
        path: '/api/users',
        body: { email: 'x@example.test', password: 'long-enough-pass', role: 'viewer', name: 'n'.repeat(101) },
      },
      400,
      /name: must be at most 100/,
    ],
    [
      'bad role',
      { method: 'POST', path: '/api/users', body: { email: 'x@example.test', password: 'long-enough-pass', role: 'root' } },
      400,
      /role/,
    ],
    [
      'short password',
      { method: 'POST', path: '/api/users', body: { email: 'x@example.test', password: 'short', role: 'viewer' } },
      400,
      /at least 12/,
    ],
    [
      'bad email',
      { method: 'POST', path: '/api/users', body: { email: 'not-an-email', password: 'long-enough-pass', role: 'viewer' } },
      400,
      /email/,
    ],
    [
      'control characters',
      { method: 'POST', path: '/api/users', body: { email: 'x@example.test', password: 'long-enough-pass', role: 'viewer', name: 'a\nb' } },
      400,
      /control characters/,
    ],
    ['array body', { method: 'PUT', path: '/api/settings', body: [1, 2] }, 400, /body/],
    [
      'unknown setting',
      { method: 'PUT', path: '/api/settings', body: { 'logs.retention_days': 5, 'no.such': 1 } },
      400,
      /unknown field "no.such"/,
    ],
    [
      'setting of the wrong type',
      { method: 'PUT', path: '/api/settings', body: { 'logs.retention_days': 'ten' } },
      400,
      /logs.retention_days/,
    ],
    [
      'bad cron',
      { method: 'PUT', path: '/api/settings', body: { 'backup.schedule': 'every day' } },
      400,
      /backup.schedule: must be a 5-field cron/,
    ],
    [
      'bad duration',
      { method: 'PUT', path: '/api/settings', body: { 'security_engine.ticker_interval': '10 seconds' } },
      400,
      /Go duration/,
    ],
    [
      'not JSON content type',
      { method: 'POST', path: '/api/users', rawBody: 'email=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      415,
      /must be JSON: send a JSON object with Content-Type: application\/json \(got application\/x-www-form-urlencoded\)/,
    ],
    ['bad id', { method: 'GET', path: '/api/users/abc' }, 400, /user id: must be a positive integer/],
    [
      'missing row',
      { method: 'PUT', path: '/api/users/9999', body: { email: 'z@example.test', name: '', role: 'viewer' } },
      404,
      /user 9999 not found/,
    ],
  ]
  it.each(cases)('%s', async (_name, c, status, message) => {
    const before = await snapshotState()
    const res = await panel.request(c.path, { method: c.method, cookie: admin, body: c.body, rawBody: c.rawBody, headers: c.headers })
    expectError(res, status, message)
    expect(await snapshotState()).toBe(before)
  })

  it('a 2 MiB body gets 413 and changes nothing', async () => {
    const before = await snapshotState()
    const big = JSON.stringify({ email: 'x@example.test', password: 'long-enough-pass', role: 'viewer', name: 'x'.repeat(2 * 1024 * 1024) })
    expectError(
      await panel.request('/api/users', { method: 'POST', cookie: admin, rawBody: big, headers: { 'content-type': 'application/json' } }),
      413,
      /too large/,
    )
    expect(await snapshotState()).toBe(before)
  })

  it('SQL-looking text is stored as text, not run', async () => {
    const nasty = "Robert'); DROP TABLE users;--"
    const res = await panel.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'bobby@example.test', password: 'long-enough-pass', role: 'viewer', name: nasty },
    })
    expect(res.status).toBe(201)
    expect(res.json.name).toBe(nasty)
    const login = await panel.request('/api/auth/login', {
      method: 'POST',
      body: { email: "' OR 1=1 --@example.test", password: "' OR '1'='1" },
    })
    expect([400, 401]).toContain(login.status)
    const setting = await panel.request('/api/settings', {
      method: 'PUT',
      cookie: admin,
      body: { 'oidc.display_name': "x'; DELETE FROM settings;--" },
    })
    expect(setting.json['oidc.display_name']).toBe("x'; DELETE FROM settings;--")
    expect((await panel.db().execute('SELECT count(*) AS n FROM users')).rows[0]!.n).toBeGreaterThanOrEqual(3)
  })
})

describe('sessions that are not valid', () => {
  it('no cookie: 401', async () => expectError(await panel.request('/api/users'), 401, /log in/))
  it('forged cookie: 401', async () => expectError(await panel.request('/api/users', { cookie: 'panel_session=forged-token-value' }), 401))
  it('expired session: 401', async () => {
    const cookie = await panel.login()
    await panel.db().execute('UPDATE sessions SET expires_at_ms = 1 WHERE id = (SELECT MAX(id) FROM sessions)')
    // The 30 s cache still holds the session; a fresh token proves the database check instead.
    const expired = await panel.login()
    await panel.db().execute('UPDATE sessions SET expires_at_ms = 1 WHERE id = (SELECT MAX(id) FROM sessions)')
    expectError(await panel.request('/api/auth/session', { cookie: expired }), 401)
    expect(cookie).not.toBe(expired)
  })
  it('ForwardAuth without a session: 302 to the login page', async () => {
    const res = await panel.request('/auth/forward', { cookie: 'panel_session=nope' })
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toMatch(/\/login/)
  })
})

describe('roles and origins', () => {
  it('viewers read but cannot mutate (403)', async () => {
    expect((await panel.request('/api/settings', { cookie: viewer })).status).toBe(200)
    expectError(await panel.request('/api/settings', { method: 'PUT', cookie: viewer, body: { 'logs.retention_days': 3 } }), 403, /viewers/)
    expectError(await panel.request('/api/users', { cookie: viewer }), 403, /admin/)
  })

  it('a mutation with another site as Origin is refused (403); same origin and no Origin pass', async () => {
    const body = { 'logs.retention_days': 9 }
    expectError(
      await panel.request('/api/settings', { method: 'PUT', cookie: admin, body, headers: { origin: 'https://evil.example.net' } }),
      403,
      /cross-site/,
    )
    expect((await panel.request('/api/settings', { method: 'PUT', cookie: admin, body, headers: { origin: panel.url } })).status).toBe(200)
    expect((await panel.request('/api/settings', { method: 'PUT', cookie: admin, body })).status).toBe(200)
  })

  it('the last admin cannot be demoted or deleted (409)', async () => {
    const me = (await panel.request('/api/auth/session', { cookie: admin })).json.user
    expectError(
      await panel.request(`/api/users/${me.id}`, { method: 'PUT', cookie: admin, body: { email: me.email, name: '', role: 'viewer' } }),
      409,
      /last admin/,
    )
    expectError(await panel.request(`/api/users/${me.id}`, { method: 'DELETE', cookie: admin }), 409, /last admin/)
    expect((await panel.request('/api/auth/session', { cookie: admin })).json.user.role).toBe('admin')
  })

  it('a duplicate email is a conflict (409)', async () => {
    expectError(
      await panel.request('/api/users', {
        method: 'POST',
        cookie: admin,
        body: { email: ADMIN.email.toUpperCase(), password: 'long-enough-pass', role: 'viewer' },
      }),
      409,
      /already exists/,
    )
  })
})

describe('login throttling', () => {
  it('a burst of failures for one account answers 429 with Retry-After, even for the right password, and is audited', async () => {
    await panel.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'target@example.test', password: 'target-password-1', role: 'viewer' },
    })
    for (let i = 0; i < 5; i++) {
      const res = await panel.request('/api/auth/login', { method: 'POST', body: { email: 'target@example.test', password: `wrong-${i}` } })
      expectError(res, 401, /invalid email or password/)
    }
    const blocked = await panel.request('/api/auth/login', {
      method: 'POST',
      body: { email: 'target@example.test', password: 'target-password-1' },
    })
    expectError(blocked, 429, /too many failed logins/)
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    const failures = await panel
      .db()
      .execute("SELECT count(*) AS n FROM login_attempts WHERE email = 'target@example.test' AND success = 0")
    expect(Number(failures.rows[0]!.n)).toBe(5)
    const audit = await panel.db().execute("SELECT raw FROM logs WHERE source='audit' AND message='login_failed'")
    expect(audit.rows.length).toBeGreaterThanOrEqual(5)
    expect(audit.rows.map((r) => String(r.raw)).join()).not.toContain('wrong-')
  })

  it('a burst from one source answers 429', async () => {
    // 20 failures from this address in the window (some recorded above already).
    let last: Awaited<ReturnType<typeof panel.request>> | undefined
    for (let i = 0; i < 25; i++) {
      last = await panel.request('/api/auth/login', {
        method: 'POST',
        body: { email: `nobody${i}@example.test`, password: 'whatever-pass' },
      })
      if (last.status === 429) break
    }
    expectError(last!, 429, /from this address/)
  })
})
