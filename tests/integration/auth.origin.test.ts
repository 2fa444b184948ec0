import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpRequest } from '../support/http'
import { buildNpmDatabase } from '../support/npm-db'
import { ADMIN, registerTestSecret, sessionCookieOf, startPanel, type PanelHandle } from '../support/panel'
import { freePort } from '../support/ports'

// Issue 33, item 1 (security review, finding 1): a sibling of the panel under the
// cookie's parent domain drove every admin mutation, with `text/plain;
// charset=application/json`, with no Content-Type, or with a multipart form. Each
// route class is tried with what a browser on a sibling name would send; nothing
// may change. The browser itself: tests/browser/origin.test.ts.

const DOMAIN = 'panel.example.test'
const SIBLING = 'http://app.example.test'
const NEW_ADMIN = { email: 'csrf-new-admin@example.test', password: 'Csrf-New-Admin-Passw0rd', role: 'admin' }
registerTestSecret(NEW_ADMIN.password)

let panel: PanelHandle
let port: number
let own: string
let admin: string
let token: string
let npmDb: Buffer

/** Everything a forged request could change: users, sessions, settings, hosts, audit rows. */
async function snapshot() {
  const db = panel.db()
  const rows = async (sql: string) => (await db.execute(sql)).rows
  return JSON.stringify([
    await rows('SELECT id, email, role, password_hash FROM users ORDER BY id'),
    await rows('SELECT id, user_id FROM sessions ORDER BY id'),
    await rows('SELECT key, value FROM settings ORDER BY key'),
    await rows('SELECT id, domain FROM hosts ORDER BY id'),
    await rows("SELECT count(*) AS n FROM logs WHERE source = 'audit'"),
  ])
}

function expectRefused(res: { status: number; json: any }, status: number, message: RegExp) {
  expect(res.status, JSON.stringify(res.json)).toBe(status)
  expect(Object.keys(res.json)).toEqual(['error'])
  expect(res.json.error).toMatch(message)
}

const npmForm = () => {
  const form = new FormData()
  form.set('database', new Blob([new Uint8Array(npmDb)]), 'database.sqlite')
  form.set('apply', 'true')
  return form
}

beforeAll(async () => {
  port = await freePort()
  own = `http://${DOMAIN}:${port}`
  panel = await startPanel({ port, env: { PANEL_DOMAIN: DOMAIN, PANEL_PUBLIC_URL: own } })
  admin = await panel.login()
  const created = await panel.request('/api/tokens', {
    method: 'POST',
    cookie: admin,
    body: { name: 'origin test', scope: 'admin', expires_in_days: 1 },
  })
  expect(created.status, created.text).toBe(201)
  token = created.json.secret
  registerTestSecret(token)
  const file = await buildNpmDatabase({
    user: [{ is_deleted: 0, email: 'admin@example.test', name: 'Admin', nickname: 'admin', avatar: '', roles: ['admin'] }],
    proxy_host: [
      { is_deleted: 0, owner_user_id: 1, meta: {}, domain_names: ['csrf-import.example.test'], forward_host: '127.0.0.1', forward_port: 9 },
    ],
  })
  npmDb = readFileSync(file)
}, 60_000)
afterAll(async () => {
  await panel?.stop()
})

describe('a JSON route (POST /api/users)', () => {
  const post = (headers: Record<string, string>, rawBody = JSON.stringify(NEW_ADMIN)) =>
    panel.request('/api/users', { method: 'POST', cookie: admin, rawBody, headers })

  it("refuses a sibling's Origin, whatever the content type (403)", async () => {
    const before = await snapshot()
    for (const type of ['application/json', 'text/plain; charset=application/json'])
      expectRefused(
        await post({ origin: SIBLING, 'content-type': type }),
        403,
        /cross-site request refused: Origin http:\/\/app\.example\.test/,
      )
    expect(await snapshot()).toBe(before)
  })

  it('refuses a body that is not application/json by its parsed type, and one with no type (415)', async () => {
    const before = await snapshot()
    for (const type of ['text/plain; charset=application/json', 'text/plain;application/json', 'application/x-www-form-urlencoded'])
      expectRefused(
        await post({ origin: own, 'content-type': type }),
        415,
        /request body must be JSON: send .*Content-Type: application\/json \(got/,
      )
    // A Blob without a type: fetch sends no Content-Type at all, as a browser does.
    const none = await fetch(`${panel.url}/api/users`, {
      method: 'POST',
      headers: { cookie: admin, origin: own },
      body: new Blob([JSON.stringify(NEW_ADMIN)]),
    })
    expect(none.status).toBe(415)
    expect(await none.json()).toEqual({ error: expect.stringMatching(/none was sent/) })
    expect(await snapshot()).toBe(before)
  })

  it('refuses Sec-Fetch-Site same-site or cross-site without an Origin (403)', async () => {
    const before = await snapshot()
    for (const site of ['same-site', 'cross-site'])
      expectRefused(await post({ 'sec-fetch-site': site, 'content-type': 'application/json' }), 403, new RegExp(`Sec-Fetch-Site: ${site}`))
    expect(await snapshot()).toBe(before)
  })

  it("passes from the panel's own origin, from a script, and with an API token from anywhere", async () => {
    const made = await post({ origin: own, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' })
    expect(made.status, made.text).toBe(201)
    await panel.request(`/api/users/${made.json.id}`, { method: 'DELETE', cookie: admin })
    const script = await post({ 'content-type': 'application/json' })
    expect(script.status, script.text).toBe(201)
    await panel.request(`/api/users/${script.json.id}`, { method: 'DELETE', cookie: admin })
    // A browser never attaches a Bearer header by itself: a token is not subject to the origin rule.
    const withToken = await panel.request('/api/users', {
      method: 'POST',
      body: NEW_ADMIN,
      headers: { authorization: `Bearer ${token}`, origin: SIBLING, 'sec-fetch-site': 'same-site' },
    })
    expect(withToken.status, withToken.text).toBe(201)
    await panel.request(`/api/users/${withToken.json.id}`, { method: 'DELETE', cookie: admin })
    // An invalid token does not open the door either.
    expect((await post({ origin: SIBLING, authorization: 'Bearer ept_not-a-real-token', 'content-type': 'application/json' })).status).toBe(
      401,
    )
  })
})

describe('a body-less mutation (DELETE /api/users/{id})', () => {
  it("refuses a sibling's Origin and Sec-Fetch-Site same-site; the user stays", async () => {
    const victim = await panel.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'victim@example.test', password: 'victim-password-123', role: 'viewer' },
    })
    expect(victim.status).toBe(201)
    const before = await snapshot()
    const del = (headers: Record<string, string>) =>
      panel.request(`/api/users/${victim.json.id}`, { method: 'DELETE', cookie: admin, headers })
    expectRefused(await del({ origin: SIBLING }), 403, /cross-site request refused/)
    expectRefused(await del({ origin: 'null' }), 403, /cross-site request refused/)
    expectRefused(await del({ 'sec-fetch-site': 'same-site' }), 403, /cross-site request refused/)
    expect(await snapshot()).toBe(before)
    expect((await del({ origin: own })).status).toBe(204)
  })
})

describe('a multipart route (POST /api/import/npm)', () => {
  const upload = (headers: Record<string, string>) =>
    fetch(`${panel.url}/api/import/npm`, { method: 'POST', headers: { cookie: admin, ...headers }, body: npmForm() }).then(async (r) => ({
      status: r.status,
      json: await r.json(),
    }))

  it("refuses a sibling's Origin, and the panel's own Origin without the header a form cannot send (403)", async () => {
    const before = await snapshot()
    expectRefused(await upload({ origin: SIBLING }), 403, /cross-site request refused/)
    expectRefused(await upload({ origin: SIBLING, 'x-panel-request': '1' }), 403, /cross-site request refused/)
    expectRefused(await upload({ 'sec-fetch-site': 'same-site' }), 403, /cross-site request refused/)
    // What an HTML form on a page of the panel's own origin (or a script without the header) sends.
    expectRefused(await upload({ origin: own }), 403, /needs the header X-Panel-Request: 1/)
    expectRefused(await upload({}), 403, /needs the header X-Panel-Request: 1/)
    expect(await snapshot()).toBe(before)
  })

  it('the certificate upload takes the same rule: no header, no upload (403 before anything is read)', async () => {
    const form = () => {
      const f = new FormData()
      f.set('cert_pem', 'not a certificate')
      f.set('key_pem', 'not a key')
      return f
    }
    const send = (headers: Record<string, string>) =>
      fetch(`${panel.url}/api/manual-certs/999`, { method: 'POST', headers: { cookie: admin, ...headers }, body: form() }).then(
        async (r) => ({ status: r.status, json: await r.json() }),
      )
    expectRefused(await send({ origin: own }), 403, /needs the header X-Panel-Request: 1/)
    expectRefused(await send({ origin: SIBLING, 'x-panel-request': '1' }), 403, /cross-site request refused/)
    // With the header the upload is read and judged: the host does not exist.
    const judged = await send({ origin: own, 'x-panel-request': '1' })
    expect([400, 404], JSON.stringify(judged.json)).toContain(judged.status)
  })

  it('imports with the header from the panel origin, and with an API token without it', async () => {
    const ok = await upload({ origin: own, 'x-panel-request': '1' })
    expect(ok.status, JSON.stringify(ok.json)).toBe(200)
    expect(ok.json.items.find((i: any) => i.kind === 'host')).toMatchObject({ outcome: 'create' })
    const again = await fetch(`${panel.url}/api/import/npm`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: npmForm(),
    })
    // Imported already: the same file now finds the host existing, and the request was read.
    expect(again.status).toBe(200)
  })
})

describe('public routes (login, setup)', () => {
  const login = (headers: Record<string, string>, rawBody = JSON.stringify({ email: ADMIN.email, password: ADMIN.password })) =>
    panel.request('/api/auth/login', { method: 'POST', rawBody, headers })

  it('login: a sibling Origin, Sec-Fetch-Site same-site and a text/plain body get no session (login CSRF)', async () => {
    const before = await snapshot()
    for (const res of [
      await login({ origin: SIBLING, 'content-type': 'application/json' }),
      await login({ 'sec-fetch-site': 'same-site', 'content-type': 'application/json' }),
      await login({ origin: own, 'content-type': 'text/plain; charset=application/json' }),
    ]) {
      expect([403, 415]).toContain(res.status)
      expect(sessionCookieOf(res)).toBeUndefined()
    }
    expect(await snapshot()).toBe(before)
    // Scripts still log in without an Origin (README).
    expect(sessionCookieOf(await login({ 'content-type': 'application/json' }))).toBeDefined()
  })

  it('setup: a DNS-rebinding page (Origin and Host both its own name) cannot claim the first admin', async () => {
    const fresh = await startPanel({ setupAdmin: false, env: { PANEL_DOMAIN: DOMAIN } })
    try {
      const body = JSON.stringify({ email: 'first@example.test', password: 'first-admin-password-1' })
      const rebound = await httpRequest({
        port: fresh.port,
        host: `rebind.attacker.test:${fresh.port}`,
        path: '/api/setup',
        method: 'POST',
        headers: { origin: `http://rebind.attacker.test:${fresh.port}` },
        body,
      })
      expect(rebound.status, rebound.body).toBe(403)
      expect((await fresh.request('/api/setup')).json).toEqual({ needs_setup: true })
      // Reached by its IP, the panel's own page still works.
      const byIp = await httpRequest({
        port: fresh.port,
        host: `127.0.0.1:${fresh.port}`,
        path: '/api/setup',
        method: 'POST',
        headers: { origin: `http://127.0.0.1:${fresh.port}` },
        body,
      })
      expect(byIp.status, byIp.body).toBe(201)
    } finally {
      await fresh.stop()
    }
  })
})

describe('framing', () => {
  it("the UI's page, the API and the reference page forbid every frame", async () => {
    for (const path of ['/', '/login', '/api/setup', '/api/docs']) {
      const res = await panel.request(path)
      expect(res.headers.get('content-security-policy'), path).toMatch(/frame-ancestors 'none'/)
      expect(res.headers.get('x-frame-options'), path).toBe('DENY')
    }
  })
})
