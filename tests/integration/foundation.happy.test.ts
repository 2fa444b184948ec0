import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN, registerTestSecret, sessionCookieOf, startPanel, type PanelHandle } from '../support/panel'
import { httpRequest } from '../support/http'

let panel: PanelHandle
let admin: string
registerTestSecret('smtp-pass-VERY-SECRET', 'viewer-password-1', 'first-password-1')

beforeAll(async () => {
  panel = await startPanel()
  admin = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

describe('health', () => {
  it('/healthz answers ok as plain text without a session', async () => {
    const res = await panel.request('/healthz')
    expect(res.status).toBe(200)
    expect(res.text).toBe('ok')
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
  })

  it('/api/system/health reports real runtime and database figures', async () => {
    const res = await panel.request('/api/system/health', { cookie: admin })
    expect(res.status).toBe(200)
    const h = res.json
    expect(h.memory.alloc_bytes).toBeGreaterThan(1_000_000)
    expect(h.memory.sys_bytes).toBeGreaterThan(h.memory.alloc_bytes)
    expect(Number.isInteger(h.memory.gc_count)).toBe(true)
    expect(h.event_loop.active_handles).toBeGreaterThan(0)
    expect(h.db.file_size_bytes).toBeGreaterThan(0)
    expect(typeof h.db.wal_size_bytes).toBe('number')
    expect(h.panel).toMatchObject({ mode: 'lan', domain: 'localhost', version: expect.any(String) })
    expect(h.panel.uptime_seconds).toBeGreaterThanOrEqual(0)
  })
})

describe('session and users', () => {
  it('shows who is logged in', async () => {
    const res = await panel.request('/api/auth/session', { cookie: admin })
    expect(res.status).toBe(200)
    expect(res.json.user).toMatchObject({ email: ADMIN.email, role: 'admin', provider: 'local', totp_enabled: false })
    expect(Date.parse(res.json.expires_at)).toBeGreaterThan(Date.now() + 29 * 24 * 3600_000)
  })

  it('sets the session cookie HttpOnly, SameSite=Lax, Path=/ and Secure for a localhost browser', async () => {
    const res = await panel.request('/api/auth/login', { method: 'POST', body: ADMIN })
    const raw = res.headers.getSetCookie().find((c) => c.startsWith('panel_session='))!
    expect(raw).toMatch(/HttpOnly/)
    expect(raw).toMatch(/SameSite=Lax/)
    expect(raw).toMatch(/Path=\//)
    expect(raw).toMatch(/Secure/)
    expect(raw).not.toMatch(/Domain=/) // no Domain for localhost
    expect(res.headers.get('strict-transport-security')).toMatch(/max-age=/)
  })

  it('in LAN mode from a non-localhost browser the cookie is not Secure and HSTS is off', async () => {
    // node:http, because fetch does not let a test choose the Host header.
    const res = await httpRequest({
      port: panel.port,
      host: '192.168.1.20:3000',
      method: 'POST',
      path: '/api/auth/login',
      body: JSON.stringify(ADMIN),
    })
    expect(res.status).toBe(200)
    const raw = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('panel_session='))!
    expect(raw).toMatch(/HttpOnly/)
    expect(raw).not.toMatch(/Secure/)
    expect(res.headers['strict-transport-security']).toBeUndefined()
  })

  it('creates, reads, updates and deletes a user; the deleted user session stops working', async () => {
    const created = await panel.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'Viewer@Example.test', password: 'viewer-password-1', name: 'Vee', role: 'viewer' },
    })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ email: 'viewer@example.test', name: 'Vee', role: 'viewer' })
    expect(JSON.stringify(created.json)).not.toMatch(/password/)
    const id = created.json.id
    const viewer = await panel.login('viewer@example.test', 'viewer-password-1')
    expect((await panel.request('/api/auth/session', { cookie: viewer })).json.user.role).toBe('viewer')

    const list = await panel.request('/api/users', { cookie: admin })
    expect(list.json.map((u: any) => u.email)).toContain('viewer@example.test')
    const updated = await panel.request(`/api/users/${id}`, {
      method: 'PUT',
      cookie: admin,
      body: { email: 'viewer@example.test', name: 'Vee Two', role: 'viewer' },
    })
    expect(updated.status).toBe(200)
    expect((await panel.request(`/api/users/${id}`, { cookie: admin })).json.name).toBe('Vee Two')

    expect((await panel.request(`/api/users/${id}`, { method: 'DELETE', cookie: admin })).status).toBe(204)
    expect((await panel.request(`/api/users/${id}`, { cookie: admin })).status).toBe(404)
    // The deletion drops the cached session too: no 30-second grace for a deleted account.
    expect((await panel.request('/api/auth/session', { cookie: viewer })).status).toBe(401)
  })

  it('writes last_seen_at only when the stored value is older than 5 minutes', async () => {
    const lastSeen = async () =>
      Number((await panel.db().execute('SELECT last_seen_at_ms AS t FROM sessions WHERE id = (SELECT MAX(id) FROM sessions)')).rows[0]!.t)
    // Fresh tokens, so the 30 s session cache cannot answer and the database is consulted.
    const stale = await panel.login()
    await panel.db().execute(`UPDATE sessions SET last_seen_at_ms = ${Date.now() - 10 * 60_000} WHERE id = (SELECT MAX(id) FROM sessions)`)
    expect((await panel.request('/api/auth/session', { cookie: stale })).status).toBe(200)
    expect(await lastSeen()).toBeGreaterThan(Date.now() - 60_000)
    const recent = await panel.login()
    const oneMinuteAgo = Date.now() - 60_000
    await panel.db().execute(`UPDATE sessions SET last_seen_at_ms = ${oneMinuteAgo} WHERE id = (SELECT MAX(id) FROM sessions)`)
    expect((await panel.request('/api/auth/session', { cookie: recent })).status).toBe(200)
    expect(await lastSeen()).toBe(oneMinuteAgo)
  })

  it('logout deletes the session and clears the cookie', async () => {
    const cookie = await panel.login()
    const res = await panel.request('/api/auth/logout', { method: 'POST', cookie })
    expect(res.status).toBe(204)
    expect(res.headers.getSetCookie().join()).toMatch(/panel_session=;.*Max-Age=0/)
    expect((await panel.request('/api/auth/session', { cookie })).status).toBe(401)
  })
})

describe('settings', () => {
  it('lists every key with defaults and never returns a secret', async () => {
    const put = await panel.request('/api/settings', {
      method: 'PUT',
      cookie: admin,
      body: { 'smtp.password': 'smtp-pass-VERY-SECRET', 'logs.retention_days': 7, 'oidc.allowed_emails': ['A@Example.test'] },
    })
    expect(put.status).toBe(200)
    expect(put.json['smtp.password']).toBe('__SET__')
    expect(put.json['logs.retention_days']).toBe(7)
    expect(put.json['oidc.allowed_emails']).toEqual(['a@example.test'])
    const get = await panel.request('/api/settings', { cookie: admin })
    expect(get.json['backup.schedule']).toBe('0 2 * * *')
    expect(get.json['oidc.client_secret']).toBe('')
    expect(get.text).not.toContain('VERY-SECRET')

    // __UNCHANGED__ keeps the stored secret; the database holds it sealed.
    await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'smtp.password': '__UNCHANGED__', 'smtp.port': 2525 } })
    const row = await panel.db().execute("SELECT value FROM settings WHERE key = 'smtp.password'")
    expect(String(row.rows[0]!.value)).toMatch(/^"v1\./)
    expect(String(row.rows[0]!.value)).not.toContain('VERY-SECRET')

    const audit = await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'settings_update'")
    expect(audit.rows.length).toBe(2)
    expect(audit.rows.map((r) => String(r.raw)).join()).not.toContain('VERY-SECRET')
    expect(panel.output()).not.toContain('VERY-SECRET')
  })
})

describe('ForwardAuth', () => {
  it('answers 200 with the user headers for a valid session', async () => {
    const res = await panel.request('/auth/forward', { cookie: admin })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-auth-user')).toBe(ADMIN.email)
    expect(res.headers.get('x-auth-email')).toBe(ADMIN.email)
    expect(res.headers.get('x-auth-name')).toBeTruthy()
    expect(res.headers.get('x-auth-provider')).toBe('local')
  })
})

describe('first-run setup', () => {
  it('offers setup while no user exists, creates the admin with a session, then refuses a second setup', async () => {
    const fresh = await startPanel({ setupAdmin: false })
    try {
      expect((await fresh.request('/api/setup')).json).toEqual({ needs_setup: true })
      const res = await fresh.request('/api/setup', {
        method: 'POST',
        body: { email: 'first@example.test', password: 'first-password-1', name: 'First' },
      })
      expect(res.status).toBe(201)
      expect(res.json).toMatchObject({ email: 'first@example.test', role: 'admin' })
      const cookie = sessionCookieOf(res)!
      expect((await fresh.request('/api/auth/session', { cookie })).json.user.email).toBe('first@example.test')
      expect((await fresh.request('/api/setup')).json).toEqual({ needs_setup: false })
      const again = await fresh.request('/api/setup', {
        method: 'POST',
        body: { email: 'second@example.test', password: 'second-password-1' },
      })
      expect(again.status).toBe(409)
      expect(again.json.error).toMatch(/already/)
    } finally {
      await fresh.stop()
    }
  })
})
