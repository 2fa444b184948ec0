import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { httpRequest, type RawResponse } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { ADMIN } from '../support/panel'

// Strict session mode (setting auth.strict_sessions, docs/auth.md) through the production Caddy:
// the panel's session stays on the panel's name, and a protected host on a domain that is NOT
// under the panel's parent domain (example.test) gets its own credential through a one-time code.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
/** The session of the default mode, from before the switch. */
let before: string
/** The admin's session after the switch: `__Host-panel_session=<token>` (the panel is reached on loopback, a secure context). */
let admin: string
const APP = 'app.other.test'
const SECOND = 'second.other.test'

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  for (const domain of [APP, SECOND])
    expect((await createHost(stack, { domain, target_group_id: group.id, auth_required: true })).status).toBe(201)
  before = stack.admin
  const on = await stack.panel.request('/api/settings', { method: 'PUT', cookie: before, body: { 'auth.strict_sessions': true } })
  expect(on.status, on.text).toBe(200)
  admin = await stack.panel.login()
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

const viaProxy = (host: string, path: string, headers: Record<string, string> = {}) =>
  httpRequest({ port: stack.httpPort, host, path, headers })

/** The value of a Set-Cookie of this name, and its attributes. */
function setCookieOf(res: RawResponse | { headers: Headers }, name: string): string | undefined {
  const all =
    res.headers instanceof Headers
      ? res.headers.getSetCookie()
      : ([] as string[]).concat((res.headers as RawResponse['headers'])['set-cookie'] ?? [])
  return all.find((c) => c.startsWith(`${name}=`))
}

/** The whole exchange for one host: /auth/forward/start on the panel, then the callback through the proxy. */
async function exchange(host: string, session: string, path = '/private?x=1') {
  const start = await stack.panel.request(`/auth/forward/start?rd=${encodeURIComponent(`http://${host}${path}`)}`, { cookie: session })
  expect(start.status, start.text).toBe(302)
  const callback = new URL(start.headers.get('location')!)
  const res = await viaProxy(host, `${callback.pathname}${callback.search}`)
  return { callback, res, credential: setCookieOf(res, 'panel_fa')?.split(';')[0] }
}

describe('strict session mode: the panel session', () => {
  it('switching the mode on ended the sessions of the default mode', async () => {
    expect((await stack.panel.request('/api/auth/session', { cookie: before })).status).toBe(401)
    expect((await stack.panel.request('/api/auth/session', { cookie: admin })).status).toBe(200)
  })

  it('is host-only and SameSite=Strict, named __Host- over HTTPS; a parent-domain copy is deleted', async () => {
    const res = await stack.panel.request('/api/auth/login', { method: 'POST', body: { email: ADMIN.email, password: ADMIN.password } })
    const cookie = setCookieOf(res, '__Host-panel_session')!
    expect(cookie).toMatch(/; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
    expect(cookie).not.toMatch(/Domain=/i)
    expect(res.headers.getSetCookie().find((c) => c.startsWith('panel_session='))).toMatch(
      /^panel_session=; Max-Age=0; Domain=example\.test;/,
    )
    // The plain name is not read in this mode: a sibling could plant that one.
    const token = admin.split('=')[1]!
    expect((await stack.panel.request('/api/auth/session', { cookie: `panel_session=${token}` })).status).toBe(401)
  })

  it('does not open a protected host by itself: ForwardAuth sends the browser to the start of the exchange, on the panel', async () => {
    const seen = up.requests.length
    for (const cookie of [admin, `panel_session=${admin.split('=')[1]}`]) {
      const res = await viaProxy(APP, '/private?x=1', { cookie })
      expect(res.status).toBe(302)
      expect(res.headers.location).toBe(
        `https://panel.example.test/auth/forward/start?rd=${encodeURIComponent(`http://${APP}/private?x=1`)}`,
      )
    }
    expect(up.requests.length).toBe(seen)
  })
})

describe('strict session mode: the code exchange, through the proxy', () => {
  it('a host on another domain works end to end: code on the panel, credential on the host, upstream with X-Auth-*', async () => {
    const { callback, res, credential } = await exchange(APP, admin)
    expect(`${callback.origin}${callback.pathname}`).toBe(`http://${APP}/.panel-auth/callback`)
    expect(callback.searchParams.get('rd')).toBe('/private?x=1')
    expect(res.status).toBe(302)
    expect(res.headers.location).toBe('/private?x=1')
    const cookie = setCookieOf(res, 'panel_fa')!
    // Host-only on the protected host; not Secure on a plain-http host.
    expect(cookie).toMatch(/^panel_fa=[^;]+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/)
    const seen = up.requests.length
    const page = await viaProxy(APP, '/private?x=1', { cookie: `a=1; ${credential}` })
    expect(page.status).toBe(200)
    expect(up.requests.length).toBe(seen + 1)
    const headers = up.requests.at(-1)!.headers
    expect(headers['x-auth-user']).toBe(ADMIN.email)
    expect(headers['x-auth-email']).toBe(ADMIN.email)
    expect(headers['x-auth-provider']).toBe('local')
    // The credential is the panel's: the upstream never sees it.
    expect(headers.cookie).toBe('a=1')
  })

  it('a code is spent on first use, and opens only the host it was minted for', async () => {
    const { callback, credential } = await exchange(APP, admin)
    expect(credential).toBeTruthy()
    const replay = await viaProxy(APP, `${callback.pathname}${callback.search}`)
    expect(replay.status).toBe(400)
    expect(JSON.parse(replay.body).error).toMatch(/code: unknown, already used/)
    expect(setCookieOf(replay, 'panel_fa')).toBeUndefined()
    // A fresh code for APP, taken to SECOND: refused, and spent too.
    const start = await stack.panel.request(`/auth/forward/start?rd=${encodeURIComponent(`http://${APP}/`)}`, { cookie: admin })
    const other = new URL(start.headers.get('location')!)
    const wrongHost = await viaProxy(SECOND, `${other.pathname}${other.search}`)
    expect(wrongHost.status).toBe(400)
    expect((await viaProxy(APP, `${other.pathname}${other.search}`)).status).toBe(400)
  })

  it("a host's credential opens no other host, and never the API", async () => {
    const { credential } = await exchange(APP, admin)
    const elsewhere = await viaProxy(SECOND, '/', { cookie: credential! })
    expect(elsewhere.status).toBe(302)
    expect(elsewhere.headers.location).toContain('/auth/forward/start?rd=')
    const token = credential!.split('=')[1]!
    for (const cookie of [credential!, `__Host-panel_session=${token}`, `panel_session=${token}`])
      expect((await stack.panel.request('/api/auth/session', { cookie })).status, cookie.split('=')[0]).toBe(401)
    expect((await stack.panel.request('/api/hosts', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401)
  })

  it('the start refuses a return URL whose host is not protected by ForwardAuth; without a session it reloads once, then goes to login', async () => {
    const refused = await stack.panel.request(`/auth/forward/start?rd=${encodeURIComponent('https://evil.test/')}`, { cookie: admin })
    expect(refused.status).toBe(400)
    expect(refused.json.error).toContain('evil.test is not an enabled host with auth_required')
    const rd = encodeURIComponent(`http://${APP}/p`)
    const first = await stack.panel.request(`/auth/forward/start?rd=${rd}`)
    expect(first.status).toBe(200)
    expect(first.text).toContain(`url=/auth/forward/start?rd=${rd}&bounce=1`)
    const second = await stack.panel.request(`/auth/forward/start?rd=${rd}&bounce=1`)
    expect(second.status).toBe(302)
    expect(second.headers.get('location')).toBe(`https://panel.example.test/login?rd=${encodeURIComponent(`/auth/forward/start?rd=${rd}`)}`)
  })

  it("ending the panel session ends the host's credential at once: logout", async () => {
    const session = await stack.panel.login()
    const { credential } = await exchange(APP, session)
    expect((await viaProxy(APP, '/', { cookie: credential! })).status).toBe(200)
    expect((await stack.panel.request('/api/auth/logout', { method: 'POST', cookie: session })).status).toBe(204)
    expect((await viaProxy(APP, '/', { cookie: credential! })).status).toBe(302)
  })

  it("ending the panel session ends the host's credential at once: a password change, a role change, the user's deletion", async () => {
    const created = await stack.panel.request('/api/users', {
      method: 'POST',
      cookie: admin,
      body: { email: 'viewer@example.test', password: 'Viewer-Passw0rd-Long', role: 'viewer', name: 'V' },
    })
    expect(created.status, created.text).toBe(201)
    const session = await stack.panel.login('viewer@example.test', 'Viewer-Passw0rd-Long')
    const { credential } = await exchange(APP, session)
    expect((await viaProxy(APP, '/', { cookie: credential! })).status).toBe(200)
    const changed = await stack.panel.request(`/api/users/${created.json.id}`, {
      method: 'PUT',
      cookie: admin,
      body: { email: 'viewer@example.test', name: 'V', role: 'viewer', password: 'Other-Passw0rd-Long' },
    })
    expect(changed.status, changed.text).toBe(200)
    expect((await viaProxy(APP, '/', { cookie: credential! })).status).toBe(302)
    // A role change, then the user's deletion, each with a new session and credential.
    const user = (body: Record<string, unknown>) =>
      stack.panel.request(`/api/users/${created.json.id}`, {
        method: 'PUT',
        cookie: admin,
        body: { email: 'viewer@example.test', name: 'V', ...body },
      })
    let next = (await exchange(APP, await stack.panel.login('viewer@example.test', 'Other-Passw0rd-Long'))).credential!
    expect((await viaProxy(APP, '/', { cookie: next })).status).toBe(200)
    expect((await user({ role: 'admin' })).status).toBe(200)
    expect((await viaProxy(APP, '/', { cookie: next })).status).toBe(302)
    next = (await exchange(APP, await stack.panel.login('viewer@example.test', 'Other-Passw0rd-Long'))).credential!
    expect((await viaProxy(APP, '/', { cookie: next })).status).toBe(200)
    expect((await stack.panel.request(`/api/users/${created.json.id}`, { method: 'DELETE', cookie: admin })).status).toBe(204)
    expect((await viaProxy(APP, '/', { cookie: next })).status).toBe(302)
  })
})
