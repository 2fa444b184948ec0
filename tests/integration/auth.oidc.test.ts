import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { registerTestSecret, sessionCookieOf, startPanel, type PanelHandle, type PanelResponse } from '../support/panel'
import { makeTempDir } from '../support/processes'
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider'

// OIDC login against a real identity provider (oidc-provider, in this process
// on loopback), driven with plain HTTP as a browser would: redirects followed
// by hand, cookies carried. The panel runs as panel.example.test, so its
// session cookie's Domain is example.test.

const PUBLIC_URL = 'https://panel.example.test'
const REDIRECT_URI = `${PUBLIC_URL}/api/auth/oidc/callback`

let panel: PanelHandle
let idp: TestOidcProvider
let admin: string
let clockFile: string

async function setClockOffset(ms: number) {
  writeFileSync(clockFile, String(ms))
}

beforeAll(async () => {
  idp = await startOidcProvider({ redirectUri: REDIRECT_URI })
  registerTestSecret(idp.clientSecret)
  clockFile = join(makeTempDir('panel-clock-'), 'offset')
  writeFileSync(clockFile, '0')
  panel = await startPanel({
    env: { PANEL_DOMAIN: 'panel.example.test', PANEL_PUBLIC_URL: PUBLIC_URL, PANEL_TEST_CLOCK_OFFSET_FILE: clockFile },
  })
  admin = await panel.login()
  const res = await panel.request('/api/settings', {
    method: 'PUT',
    cookie: admin,
    body: {
      'oidc.issuer': idp.issuer,
      'oidc.client_id': idp.clientId,
      'oidc.client_secret': idp.clientSecret,
      'oidc.display_name': 'Test IdP',
    },
  })
  expect(res.status).toBe(200)
  expect(res.json['oidc.client_secret']).toBe('__SET__')
})
afterAll(async () => {
  await panel?.stop()
  await idp?.stop()
})

beforeEach(async () => {
  idp.tamper = 'none'
  await setClockOffset(0)
  await panel.request('/api/settings', {
    method: 'PUT',
    cookie: admin,
    body: { 'oidc.allowed_emails': [], 'oidc.require_email_verified': true },
  })
})

/**
 * The `name=value` of the login cookie that binds an OIDC login to the browser that started it
 * ('' when there is none: the test about the cookie itself asserts that it is set).
 */
function loginCookieOf(res: PanelResponse): string {
  const raw = res.headers.getSetCookie().find((c) => /^(__Host-)?panel_oidc=./.test(c))
  return raw?.split(';')[0] ?? ''
}

/**
 * GET /api/auth/oidc/login and the provider's redirects; returns the callback path+query the
 * browser would load and the login cookie that browser got.
 */
async function startLogin(rd?: string): Promise<{ authorizationUrl: URL; callbackPath: string; loginCookie: string }> {
  const res = await panel.request(`/api/auth/oidc/login${rd === undefined ? '' : `?rd=${encodeURIComponent(rd)}`}`)
  expect(res.status).toBe(302)
  const authorizationUrl = new URL(res.headers.get('location')!)
  const callback = await idp.authorize(authorizationUrl.href)
  return { authorizationUrl, callbackPath: `${callback.pathname}${callback.search}`, loginCookie: loginCookieOf(res) }
}

async function loginAs(sub: string, rd?: string): Promise<PanelResponse> {
  idp.nextAccount = sub
  const { callbackPath, loginCookie } = await startLogin(rd)
  return panel.request(callbackPath, { cookie: loginCookie })
}

const errorCodeOf = (res: PanelResponse) => {
  expect(res.status).toBe(302)
  const location = res.headers.get('location')!
  expect(location).toMatch(/^\/login\?oidc_error=/)
  return new URL(location, PUBLIC_URL).searchParams.get('oidc_error')
}

async function auditRows(message: string) {
  return (
    await panel.db().execute({ sql: "SELECT raw FROM logs WHERE source = 'audit' AND message = ? ORDER BY id", args: [message] })
  ).rows.map((r) => JSON.parse(String(r.raw)))
}

async function sessionCount() {
  return Number((await panel.db().execute('SELECT count(*) AS n FROM sessions')).rows[0]!.n)
}

describe('OIDC login', () => {
  it('the login page learns that OIDC is on and what to call it', async () => {
    const res = await panel.request('/api/auth/providers')
    expect(res.json).toEqual({ local: true, oidc: { enabled: true, display_name: 'Test IdP' } })
  })

  it('redirects to the provider with client_id, redirect_uri, state, nonce and an S256 challenge, never the verifier', async () => {
    const res = await panel.request('/api/auth/oidc/login')
    const url = new URL(res.headers.get('location')!)
    expect(url.origin).toBe(idp.issuer)
    const p = url.searchParams
    expect(p.get('client_id')).toBe(idp.clientId)
    expect(p.get('redirect_uri')).toBe(REDIRECT_URI)
    expect(p.get('response_type')).toBe('code')
    expect(p.get('scope')).toBe('openid email profile')
    expect(p.get('code_challenge_method')).toBe('S256')
    expect(p.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(p.get('state')!.length).toBeGreaterThanOrEqual(32)
    expect(p.get('nonce')!.length).toBeGreaterThanOrEqual(32)
    expect(p.get('state')).not.toBe(p.get('nonce'))
    expect([...p.keys()]).not.toContain('code_verifier')
  })

  it('creates the user by sub, sets the parent-domain cookie, goes to rd; a second login updates the same user', async () => {
    idp.accounts.set('sub-alice', { email: 'Alice@Example.test', email_verified: true, name: 'Alice' })
    const res = await loginAs('sub-alice', 'https://app.example.test/after?x=1')
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('https://app.example.test/after?x=1')
    const raw = res.headers.getSetCookie().find((c) => c.startsWith('panel_session='))!
    expect(raw).toMatch(/Domain=example\.test/i)
    expect(raw).toMatch(/HttpOnly/)
    expect(raw).toMatch(/SameSite=Lax/)
    const cookie = sessionCookieOf(res)!
    const session = await panel.request('/api/auth/session', { cookie })
    expect(session.json.user).toMatchObject({
      email: 'alice@example.test',
      name: 'Alice',
      provider: 'oidc',
      role: 'viewer',
      totp_enabled: false,
    })
    const rows = (await panel.db().execute("SELECT id, email, external_id FROM users WHERE provider = 'oidc'")).rows
    expect(rows).toHaveLength(1)
    expect(rows[0]!.external_id).toBe('sub-alice')
    expect((await auditRows('oidc_user_create')).length).toBe(1)
    expect((await auditRows('oidc_login')).at(-1)).toMatchObject({ sub: 'sub-alice', created: true })

    // The provider changed her email and name: same user (same sub), updated fields.
    idp.accounts.set('sub-alice', { email: 'alice.new@example.test', email_verified: true, name: 'Alice N' })
    const again = await loginAs('sub-alice')
    expect(again.headers.get('location')).toBe('/')
    const after = (await panel.db().execute("SELECT id, email, name FROM users WHERE provider = 'oidc'")).rows
    expect(after).toHaveLength(1)
    expect(after[0]!.id).toBe(rows[0]!.id)
    expect(after[0]).toMatchObject({ email: 'alice.new@example.test', name: 'Alice N' })
    expect((await auditRows('oidc_login')).at(-1)).toMatchObject({ sub: 'sub-alice', created: false })
    // Scripts and ForwardAuth accept the OIDC session like any other.
    const forward = await panel.request('/auth/forward', { cookie: sessionCookieOf(again)! })
    expect(forward.status).toBe(200)
    expect(forward.headers.get('x-auth-provider')).toBe('oidc')
  })

  it('an unknown state is state_not_found', async () => {
    const before = await sessionCount()
    expect(errorCodeOf(await panel.request('/api/auth/oidc/callback?code=abc&state=never-issued'))).toBe('state_not_found')
    expect(errorCodeOf(await panel.request('/api/auth/oidc/callback?code=abc'))).toBe('state_not_found')
    expect(await sessionCount()).toBe(before)
    expect((await auditRows('oidc_state_not_found')).length).toBeGreaterThanOrEqual(2)
  })

  it('a reused state (second callback with the same state) is state_not_found', async () => {
    idp.accounts.set('sub-bob', { email: 'bob@example.test', email_verified: true })
    idp.nextAccount = 'sub-bob'
    const { callbackPath, loginCookie } = await startLogin()
    const first = await panel.request(callbackPath, { cookie: loginCookie })
    expect(sessionCookieOf(first)).toBeTruthy()
    const second = await panel.request(callbackPath, { cookie: loginCookie })
    expect(errorCodeOf(second)).toBe('state_not_found')
    expect(sessionCookieOf(second)).toBeUndefined()
  })

  it('an error from the provider (consent refused) is provider_error, and uses up the state', async () => {
    const res = await panel.request('/api/auth/oidc/login')
    const state = new URL(res.headers.get('location')!).searchParams.get('state')!
    const cookie = loginCookieOf(res)
    const refused = await panel.request(`/api/auth/oidc/callback?error=access_denied&state=${encodeURIComponent(state)}`, { cookie })
    expect(errorCodeOf(refused)).toBe('provider_error')
    expect((await auditRows('oidc_provider_error')).at(-1)).toMatchObject({ provider_error: 'access_denied' })
    expect(errorCodeOf(await panel.request(`/api/auth/oidc/callback?code=x&state=${encodeURIComponent(state)}`, { cookie }))).toBe(
      'state_not_found',
    )
  })

  it('an expired state (older than 10 minutes) is state_not_found', async () => {
    idp.accounts.set('sub-carol', { email: 'carol@example.test', email_verified: true })
    idp.nextAccount = 'sub-carol'
    const { callbackPath, loginCookie } = await startLogin()
    await setClockOffset(10 * 60_000 + 1_000) // the panel's auth clock moves 10 minutes on
    const before = await sessionCount()
    const res = await panel.request(callbackPath, { cookie: loginCookie })
    expect(errorCodeOf(res)).toBe('state_not_found')
    expect(sessionCookieOf(res)).toBeUndefined()
    expect(await sessionCount()).toBe(before)
  })

  // Regression (issue 33, item 10; review finding 12): the callback accepted any state found in
  // the pending store, so an attacker could start a login, sign in at the provider as themselves
  // and hand the callback URL to a victim: the victim's own session was ended and their browser
  // signed in to the attacker's account. The state is now bound to the browser by a cookie.
  it('a callback from a browser that did not start the login is state_not_found: no session, the victim keeps theirs', async () => {
    idp.accounts.set('sub-mallet', { email: 'mallet@example.test', email_verified: true })
    const victim = await panel.login() // a signed-in admin's browser
    const before = await sessionCount()

    // The attacker's login, completed at the provider, its callback URL opened by the victim.
    idp.nextAccount = 'sub-mallet'
    const attack = await startLogin('/settings')
    const res = await panel.request(attack.callbackPath, { cookie: victim })
    expect(errorCodeOf(res)).toBe('state_not_found')
    expect(sessionCookieOf(res)).toBeUndefined()
    expect((await auditRows('oidc_state_not_found')).at(-1)).toMatchObject({ code: 'state_not_found', reason: 'no_login_cookie' })

    // A victim in the middle of a login of their own carries a login cookie: not the attacker's.
    const own = loginCookieOf(await panel.request('/api/auth/oidc/login'))
    idp.nextAccount = 'sub-mallet'
    const second = await startLogin()
    const res2 = await panel.request(second.callbackPath, { cookie: `${victim}; ${own}` })
    expect(errorCodeOf(res2)).toBe('state_not_found')
    expect((await auditRows('oidc_state_not_found')).at(-1)).toMatchObject({ reason: 'started_in_another_browser' })
    // The state is used up by the refusal: not even the attacker's own browser completes it now.
    expect(errorCodeOf(await panel.request(second.callbackPath, { cookie: second.loginCookie }))).toBe('state_not_found')

    // The victim's session was not touched, no session was created, and the attacker's account was never signed in.
    expect((await panel.request('/api/auth/session', { cookie: victim })).json.user.email).toBe('admin@example.test')
    expect(await sessionCount()).toBe(before)
    expect((await panel.db().execute("SELECT count(*) AS n FROM users WHERE external_id = 'sub-mallet'")).rows[0]!.n).toBe(0)
  })

  it('the login cookie is host-only, HttpOnly, SameSite=Lax and lives as long as the state', async () => {
    const res = await panel.request('/api/auth/oidc/login')
    const raw = res.headers.getSetCookie().find((c) => c.startsWith('__Host-panel_oidc='))!
    expect(raw).toBeDefined()
    expect(raw).not.toMatch(/Domain=/i)
    expect(raw).toMatch(/Path=\//)
    expect(raw).toMatch(/HttpOnly/)
    expect(raw).toMatch(/Secure/)
    expect(raw).toMatch(/SameSite=Lax/)
    expect(raw).toMatch(/Max-Age=600/)
  })

  for (const [tamper, reason] of [
    ['signature', 'signature'],
    ['audience', 'audience'],
    ['nonce', 'nonce'],
    ['expired', 'expired'],
  ] as const) {
    it(`an id_token with a ${tamper === 'signature' ? 'tampered signature' : `wrong ${tamper === 'expired' ? 'expiry' : tamper}`} is token_invalid, with no session`, async () => {
      idp.accounts.set('sub-dave', { email: 'dave@example.test', email_verified: true })
      idp.tamper = tamper
      const before = await sessionCount()
      const res = await loginAs('sub-dave')
      expect(errorCodeOf(res)).toBe('token_invalid')
      expect(sessionCookieOf(res)).toBeUndefined()
      expect(await sessionCount()).toBe(before)
      expect((await auditRows('oidc_token_invalid')).at(-1)).toMatchObject({ code: 'token_invalid', reason })
      // An untrusted token creates no user.
      expect((await panel.db().execute("SELECT count(*) AS n FROM users WHERE external_id = 'sub-dave'")).rows[0]!.n).toBe(0)
    })
  }

  it('an email off the allowlist is refused after verification, with an audit row', async () => {
    await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.allowed_emails': ['someone.else@example.test'] } })
    idp.accounts.set('sub-erin', { email: 'erin@example.test', email_verified: true })
    const before = await sessionCount()
    const res = await loginAs('sub-erin')
    expect(errorCodeOf(res)).toBe('email_not_allowed')
    expect(sessionCookieOf(res)).toBeUndefined()
    expect(await sessionCount()).toBe(before)
    expect((await auditRows('oidc_email_not_allowed')).at(-1)).toMatchObject({ email: 'erin@example.test', sub: 'sub-erin' })
    // Allowed once listed (case-insensitive).
    await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.allowed_emails': ['ERIN@example.test'] } })
    expect(sessionCookieOf(await loginAs('sub-erin'))).toBeTruthy()
  })

  it('an unverified email is refused while the requirement is on, accepted when it is off', async () => {
    idp.accounts.set('sub-frank', { email: 'frank@example.test', email_verified: false })
    const res = await loginAs('sub-frank')
    expect(errorCodeOf(res)).toBe('email_not_verified')
    expect(sessionCookieOf(res)).toBeUndefined()
    expect((await auditRows('oidc_email_not_verified')).at(-1)).toMatchObject({ email: 'frank@example.test', sub: 'sub-frank' })
    await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.require_email_verified': false } })
    expect(sessionCookieOf(await loginAs('sub-frank'))).toBeTruthy()
  })

  it('an email that belongs to a local account is account_conflict, not a takeover', async () => {
    idp.accounts.set('sub-mallory', { email: 'admin@example.test', email_verified: true })
    const res = await loginAs('sub-mallory')
    expect(errorCodeOf(res)).toBe('account_conflict')
    expect(sessionCookieOf(res)).toBeUndefined()
  })

  for (const rd of [
    'https://app.example.test\\@evil.example/',
    '/ok\u0001path',
    '//evil.example',
    'https://evil.example',
    'javascript:alert(1)',
  ]) {
    it(`rd ${JSON.stringify(rd)} is replaced by the panel's home`, async () => {
      idp.accounts.set('sub-gina', { email: 'gina@example.test', email_verified: true })
      const res = await loginAs('sub-gina', rd)
      expect(res.status).toBe(302)
      expect(res.headers.get('location')).toBe('/')
      expect(sessionCookieOf(res)).toBeTruthy()
    })
  }

  it('the client secret is stored sealed and never shown', async () => {
    const stored = (await panel.db().execute("SELECT value FROM settings WHERE key = 'oidc.client_secret'")).rows[0]!.value
    expect(String(stored)).not.toContain(idp.clientSecret)
    expect(String(stored)).toMatch(/^"v1\./)
    const audit = (await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit'")).rows.map((r) => String(r.raw)).join('\n')
    expect(audit).not.toContain(idp.clientSecret)
  })

  it('an unreachable provider answers provider_unreachable, audited, without hanging', async () => {
    await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.issuer': 'http://127.0.0.1:1' } })
    try {
      expect(errorCodeOf(await panel.request('/api/auth/oidc/login'))).toBe('provider_unreachable')
      expect((await auditRows('oidc_provider_unreachable')).length).toBeGreaterThanOrEqual(1)
    } finally {
      await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.issuer': idp.issuer } })
    }
  })

  it('with OIDC off the login answers oidc_disabled', async () => {
    await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.issuer': '' } })
    try {
      expect(errorCodeOf(await panel.request('/api/auth/oidc/login'))).toBe('oidc_disabled')
      expect((await panel.request('/api/auth/providers')).json.oidc.enabled).toBe(false)
    } finally {
      await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'oidc.issuer': idp.issuer } })
    }
  })
})
