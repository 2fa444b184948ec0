import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, registerTestSecret, sessionCookieOf, startPanel, type PanelHandle } from '../support/panel'
import { httpRequest, type RawResponse } from '../support/http'

// Cookie attributes in both modes, HSTS only with Secure, password rules,
// session rotation on login and on privilege change, and logout reaching the
// ForwardAuth cache of the process.

registerTestSecret('rotation-password-1', 'rotation-password-2', 'changed-admin-password-9')

let lan: PanelHandle
let pub: PanelHandle

beforeAll(async () => {
  ;[lan, pub] = await Promise.all([
    startPanel({ env: { PANEL_DOMAIN: 'panel.example.test', PANEL_MODE: 'lan' } }),
    startPanel({ env: { PANEL_DOMAIN: 'panel.example.test', PANEL_MODE: 'public' } }),
  ])
})
afterAll(async () => {
  await Promise.all([lan?.stop(), pub?.stop()])
})

const sessionSetCookie = (res: RawResponse) =>
  ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('panel_session='))
const loginVia = (p: PanelHandle, host: string) =>
  httpRequest({ port: p.port, host, method: 'POST', path: '/api/auth/login', body: JSON.stringify(ADMIN) })

describe('cookie attributes and HSTS', () => {
  it('public mode: Secure, HttpOnly, SameSite=Lax, Path=/, parent Domain, 30-day Max-Age, and HSTS, from any browser', async () => {
    for (const host of ['panel.example.test', '192.168.1.20:3000', '127.0.0.1']) {
      const res = await loginVia(pub, host)
      expect(res.status).toBe(200)
      const raw = sessionSetCookie(res)!
      expect(raw).toMatch(/; Secure/)
      expect(raw).toMatch(/; HttpOnly/)
      expect(raw).toMatch(/; SameSite=Lax/)
      expect(raw).toMatch(/; Path=\//)
      expect(raw).toMatch(/; Domain=example\.test/)
      expect(raw).toMatch(/; Max-Age=2592000/)
      expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/)
    }
  })

  it('LAN mode: not Secure and no HSTS from a LAN browser; Secure and HSTS from localhost', async () => {
    const remote = await loginVia(lan, 'panel.example.test')
    expect(sessionSetCookie(remote)).not.toMatch(/Secure/)
    expect(sessionSetCookie(remote)).toMatch(/; Domain=example\.test/)
    expect(sessionSetCookie(remote)).toMatch(/; HttpOnly/)
    expect(remote.headers['strict-transport-security']).toBeUndefined()
    // Every answer, not only the login, follows the same rule.
    expect(
      (await httpRequest({ port: lan.port, host: '192.168.1.20', path: '/api/auth/providers' })).headers['strict-transport-security'],
    ).toBeUndefined()
    const local = await loginVia(lan, `localhost:${lan.port}`)
    expect(sessionSetCookie(local)).toMatch(/; Secure/)
    expect(local.headers['strict-transport-security']).toMatch(/max-age=/)
  })

  it('logout clears the cookie with the same Domain and Path', async () => {
    const cookie = await lan.login()
    const res = await lan.request('/api/auth/logout', { method: 'POST', cookie })
    expect(res.status).toBe(204)
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith('panel_session='))!
    expect(cleared).toMatch(/Max-Age=0/)
    expect(cleared).toMatch(/Domain=example\.test/)
    expect(cleared).toMatch(/Path=\//)
  })
})

describe('password rules', () => {
  it('refuses fewer than 12 characters and the email as password, on create and on update', async () => {
    const admin = await lan.login()
    const short = await lan.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'rules@example.test', password: 'elevenchars', role: 'viewer' },
    })
    expect(short.status).toBe(400)
    expect(short.json.error).toMatch(/password: must be at least 12 characters/)
    const same = await lan.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'longlocalpart@example.test', password: 'LongLocalPart@example.test', role: 'viewer' },
    })
    expect(same.status).toBe(400)
    expect(same.json.error).toMatch(/password: must not be the email address/)
    const local = await lan.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'longlocalpart@example.test', password: 'longlocalpart', role: 'viewer' },
    })
    expect(local.json.error).toMatch(/password: must not be the email address/)
    const created = await lan.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'longlocalpart@example.test', password: 'rotation-password-1', role: 'viewer' },
    })
    expect(created.status).toBe(201)
    const update = await lan.request(`/api/users/${created.json.id}`, {
      method: 'PUT',
      cookie: admin,
      body: { email: 'longlocalpart@example.test', name: '', role: 'viewer', password: 'longlocalpart@example.test' },
    })
    expect(update.status).toBe(400)
    expect(update.json.error).toMatch(/must not be the email address/)
    // The stored hash is memory-hard (argon2id).
    const hash = String(
      (await lan.db().execute("SELECT password_hash FROM users WHERE email = 'longlocalpart@example.test'")).rows[0]!.password_hash,
    )
    expect(hash).toMatch(/^\$argon2id\$/)
  })
})

describe('session rotation', () => {
  it('a login ends the session the browser carried before', async () => {
    const before = await lan.login()
    const res = await lan.request('/api/auth/login', { method: 'POST', body: ADMIN, cookie: before })
    const after = sessionCookieOf(res)!
    expect(after).not.toBe(before)
    expect((await lan.request('/api/auth/session', { cookie: before })).status).toBe(401)
    expect((await lan.request('/api/auth/session', { cookie: after })).status).toBe(200)
  })

  it('a role change ends every session of that user, at once (no 30-second cache grace)', async () => {
    const admin = await lan.login()
    const created = await lan.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'promoted@example.test', password: 'rotation-password-2', role: 'viewer' },
    })
    const viewer = await lan.login('promoted@example.test', 'rotation-password-2')
    expect((await lan.request('/api/auth/session', { cookie: viewer })).status).toBe(200) // now cached
    const put = await lan.request(`/api/users/${created.json.id}`, {
      method: 'PUT',
      cookie: admin,
      body: { email: 'promoted@example.test', name: '', role: 'admin' },
    })
    expect(put.status).toBe(200)
    expect((await lan.request('/api/auth/session', { cookie: viewer })).status).toBe(401)
    expect((await lan.request('/auth/forward', { cookie: viewer })).status).toBe(302)
    // A change of the name only is not a privilege change.
    const again = await lan.login('promoted@example.test', 'rotation-password-2')
    // ForwardAuth's answer is kept with the cached session: a new name shows in the next check.
    expect((await lan.request('/auth/forward', { cookie: again })).headers.get('x-auth-name')).toBe('promoted@example.test')
    await lan.request(`/api/users/${created.json.id}`, {
      method: 'PUT',
      cookie: admin,
      body: { email: 'promoted@example.test', name: 'P', role: 'admin' },
    })
    expect((await lan.request('/api/auth/session', { cookie: again })).status).toBe(200)
    expect((await lan.request('/auth/forward', { cookie: again })).headers.get('x-auth-name')).toBe('P')
  })

  it("changing one's own password gives a new session and ends the old ones", async () => {
    const other = await pub.login()
    const mine = await pub.login()
    const me = (await pub.request('/api/auth/session', { cookie: mine })).json.user
    const put = await pub.request(`/api/users/${me.id}`, {
      method: 'PUT',
      cookie: mine,
      body: { email: me.email, name: '', role: 'admin', password: 'changed-admin-password-9' },
    })
    expect(put.status).toBe(200)
    const fresh = sessionCookieOf(put)!
    expect(fresh).toBeTruthy()
    expect((await pub.request('/api/auth/session', { cookie: fresh })).status).toBe(200)
    expect((await pub.request('/api/auth/session', { cookie: mine })).status).toBe(401)
    expect((await pub.request('/api/auth/session', { cookie: other })).status).toBe(401)
    expect((await pub.request('/api/auth/login', { method: 'POST', body: ADMIN })).status).toBe(401)
    expect(
      (await pub.request('/api/auth/login', { method: 'POST', body: { email: ADMIN.email, password: 'changed-admin-password-9' } })).status,
    ).toBe(200)
  })
})

describe('logout', () => {
  it('ends the session everywhere, including the ForwardAuth cache of this process', async () => {
    const cookie = await lan.login()
    const first = await lan.request('/auth/forward', { cookie })
    expect(first.status).toBe(200)
    expect(first.headers.get('x-auth-email')).toBe(ADMIN.email)
    expect((await lan.request('/auth/forward', { cookie })).status).toBe(200) // answered from the 30 s cache
    expect((await lan.request('/api/auth/logout', { method: 'POST', cookie })).status).toBe(204)
    const after = await lan.request('/auth/forward', {
      cookie,
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'app.example.test', 'x-forwarded-uri': '/x' },
    })
    expect(after.status).toBe(302)
    expect(after.headers.get('location')).toContain('/login?rd=')
    expect((await lan.request('/api/auth/session', { cookie })).status).toBe(401)
  })
})

describe('login attempts', () => {
  it('an unknown email and an account without a password answer like a wrong password, and count towards the throttle', async () => {
    const unknown = await lan.request('/api/auth/login', {
      method: 'POST',
      body: { email: 'nobody-here@example.test', password: 'whatever-password' },
    })
    expect(unknown.status).toBe(401)
    const wrong = await lan.request('/api/auth/login', { method: 'POST', body: { email: ADMIN.email, password: 'not-the-password' } })
    expect(wrong.status).toBe(401)
    expect(unknown.json).toEqual(wrong.json)
    const rows = await lan
      .db()
      .execute("SELECT email FROM login_attempts WHERE success = 0 AND email IN ('nobody-here@example.test', 'admin@example.test')")
    expect(rows.rows.length).toBeGreaterThanOrEqual(2)
  })

  it('a burst of wrong passwords answers 429 with a Retry-After inside the 15-minute window', async () => {
    const body = { email: 'burst-target@example.test', password: 'never-the-password' }
    for (let i = 0; i < 5; i++) expect((await pub.request('/api/auth/login', { method: 'POST', body })).status).toBe(401)
    const blocked = await pub.request('/api/auth/login', { method: 'POST', body })
    expect(blocked.status).toBe(429)
    const retryAfter = Number(blocked.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(15 * 60)
  })
})
