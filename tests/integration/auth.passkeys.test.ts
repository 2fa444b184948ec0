import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateHOTP } from '@oslojs/otp'
import { decodeBase32IgnorePadding } from '@oslojs/encoding'
import { registerTestSecret, sessionCookieOf, startPanel, type PanelHandle, type PanelResponse } from '../support/panel'
import { freePort } from '../support/ports'
import { SoftAuthenticator, type SoftCredential } from '../support/soft-authenticator'

// Passkeys at the API on the built panel, with an authenticator in the test process
// (tests/support/soft-authenticator.ts) for the responses a browser will not make:
// a replayed assertion, an answer for another origin, an old challenge answered
// again with a fresh signature, another account's key at the second step. The
// normal flows run in Chromium with its virtual authenticator (tests/browser/passkeys.test.ts).

const PASSWORD = 'passkey-user-password-1'
registerTestSecret(PASSWORD)

let panel: PanelHandle
let admin: string
let origin: string
let authn: SoftAuthenticator

beforeAll(async () => {
  const port = await freePort()
  origin = `http://localhost:${port}`
  panel = await startPanel({ port, env: { PANEL_DOMAIN: 'localhost', PANEL_PUBLIC_URL: origin } })
  authn = new SoftAuthenticator('localhost', origin)
  admin = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

const api = (path: string, method = 'GET', body?: unknown, cookie?: string) => panel.request(path, { method, body, cookie })
const audit = async (action: string) =>
  (await panel.db().execute({ sql: "SELECT raw FROM logs WHERE source = 'audit' AND message = ? ORDER BY id", args: [action] })).rows.map(
    (r) => String(r.raw),
  )

async function newUser(name: string): Promise<{ email: string; cookie: string; id: number }> {
  const email = `${name}@example.test`
  const created = await api('/api/users', 'POST', { email, password: PASSWORD, role: 'viewer' }, admin)
  expect(created.status).toBe(201)
  return { email, cookie: await panel.login(email, PASSWORD), id: created.json.id }
}

async function register(cookie: string, name = 'Laptop', o: { origin?: string; userVerified?: boolean } = {}) {
  const options = await api('/api/auth/passkeys/options', 'POST', {}, cookie)
  expect(options.status).toBe(200)
  expect(options.json.rp.id).toBe('localhost')
  expect(options.json.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' })
  const made = authn.create(options.json, o)
  const res = await api('/api/auth/passkeys', 'POST', { name, response: made.response }, cookie)
  return { res, credential: made.credential }
}

async function loginChallenge(): Promise<string> {
  const res = await api('/api/auth/passkeys/login/options', 'POST', {})
  expect(res.status).toBe(200)
  expect(res.json.rpId).toBe('localhost')
  expect(res.json.allowCredentials ?? []).toEqual([])
  return res.json.challenge
}

const passkeyLogin = (response: unknown) => api('/api/auth/passkeys/login', 'POST', { response })

async function signInWith(credential: SoftCredential): Promise<PanelResponse> {
  return passkeyLogin(authn.get(credential, await loginChallenge()))
}

describe('registration', () => {
  it('stores a named key, lists it without key material, and audits the change', async () => {
    const u = await newUser('reg')
    const { res, credential } = await register(u.cookie, 'Work laptop')
    expect(res.status).toBe(201)
    expect(res.json).toEqual({
      id: expect.any(Number),
      name: 'Work laptop',
      transports: ['internal'],
      created_at: expect.any(String),
      last_used_at: null,
    })
    const list = await api('/api/auth/passkeys', 'GET', undefined, u.cookie)
    expect(list.json.passkeys).toEqual([res.json])
    // Another user sees only their own keys.
    expect((await api('/api/auth/passkeys', 'GET', undefined, admin)).json.passkeys).toEqual([])
    const row = (await panel.db().execute({ sql: 'SELECT public_key, credential_id FROM passkeys WHERE id = ?', args: [res.json.id] }))
      .rows[0]!
    expect(row.credential_id).toBe(credential.id)
    expect(Buffer.from(String(row.public_key), 'base64url')).toEqual(Buffer.from(credential.cose))
    const rows = (await audit('passkey_register')).filter((r) => r.includes(`"passkey_id":${res.json.id}`))
    expect(rows).toHaveLength(1)
    expect(rows[0]).not.toContain(String(row.public_key))
    expect(rows[0]).not.toContain(credential.id)
    expect(panel.output()).not.toContain(String(row.public_key))
  })

  it('refuses an answer for another origin, without user verification, with a used challenge, or to another account', async () => {
    const u = await newUser('reg-bad')
    const other = await newUser('reg-other')
    expect((await register(u.cookie, 'Evil', { origin: 'https://evil.example' })).res.status).toBe(400)
    expect((await register(u.cookie, 'No UV', { userVerified: false })).res.status).toBe(400)
    // One challenge, one registration: the same options answered again are refused.
    const options = await api('/api/auth/passkeys/options', 'POST', {}, u.cookie)
    const first = authn.create(options.json)
    expect((await api('/api/auth/passkeys', 'POST', { name: 'One', response: first.response }, u.cookie)).status).toBe(201)
    const second = authn.create(options.json)
    const again = await api('/api/auth/passkeys', 'POST', { name: 'Two', response: second.response }, u.cookie)
    expect(again.status).toBe(400)
    expect(again.json.error).toContain('expired, was already used')
    // Options of one account, finished by another session: refused.
    const theirs = await api('/api/auth/passkeys/options', 'POST', {}, other.cookie)
    const stolen = authn.create(theirs.json)
    expect((await api('/api/auth/passkeys', 'POST', { name: 'Stolen', response: stolen.response }, u.cookie)).status).toBe(400)
    expect((await api('/api/auth/passkeys', 'GET', undefined, u.cookie)).json.passkeys.map((p: any) => p.name)).toEqual(['One'])
    // Bad input: 400 with what to fix.
    const bad = await api('/api/auth/passkeys', 'POST', { name: '', response: first.response }, u.cookie)
    expect(bad.status).toBe(400)
    expect(bad.json.error).toContain('name')
  })

  it("renames and removes only the caller's own keys, audited", async () => {
    const u = await newUser('manage')
    const other = await newUser('manage-other')
    const { res } = await register(u.cookie, 'Old name')
    expect((await api(`/api/auth/passkeys/${res.json.id}`, 'PUT', { name: 'Mine' }, other.cookie)).status).toBe(404)
    expect((await api(`/api/auth/passkeys/${res.json.id}`, 'DELETE', undefined, other.cookie)).status).toBe(404)
    const renamed = await api(`/api/auth/passkeys/${res.json.id}`, 'PUT', { name: 'New name' }, u.cookie)
    expect(renamed.status).toBe(200)
    expect(renamed.json.name).toBe('New name')
    expect((await audit('passkey_rename')).some((r) => r.includes('"to":"New name"'))).toBe(true)
    expect((await api(`/api/auth/passkeys/${res.json.id}`, 'DELETE', undefined, u.cookie)).status).toBe(204)
    expect((await audit('passkey_delete')).some((r) => r.includes(`"passkey_id":${res.json.id}`))).toBe(true)
    expect((await api('/api/auth/passkeys', 'GET', undefined, u.cookie)).json.passkeys).toEqual([])
  })
})

describe('login with a passkey', () => {
  it('signs in with a session cookie like a password login, and moves the counter', async () => {
    const u = await newUser('login')
    const { credential } = await register(u.cookie)
    const res = await signInWith(credential)
    expect(res.status).toBe(200)
    expect(res.json.user.email).toBe(u.email)
    const cookie = sessionCookieOf(res)!
    expect((await api('/api/auth/session', 'GET', undefined, cookie)).json.user.email).toBe(u.email)
    const listed = (await api('/api/auth/passkeys', 'GET', undefined, cookie)).json.passkeys[0]
    expect(listed.last_used_at).not.toBeNull()
    expect((await audit('login')).some((r) => r.includes('"method":"passkey"') && r.includes(`"user_id":${u.id}`))).toBe(true)
  })

  it('refuses a replayed assertion', async () => {
    const u = await newUser('replay')
    const { credential } = await register(u.cookie)
    const assertion = authn.get(credential, await loginChallenge())
    expect((await passkeyLogin(assertion)).status).toBe(200)
    const replay = await passkeyLogin(assertion)
    expect(replay.status).toBe(401)
    expect(sessionCookieOf(replay)).toBeUndefined()
  })

  it('refuses a challenge answered twice, even with a fresh signature', async () => {
    const u = await newUser('reuse')
    const { credential } = await register(u.cookie)
    const challenge = await loginChallenge()
    expect((await passkeyLogin(authn.get(credential, challenge))).status).toBe(200)
    expect((await passkeyLogin(authn.get(credential, challenge))).status).toBe(401)
  })

  it('refuses an assertion made for another origin, or without user verification, and spends its challenge', async () => {
    const u = await newUser('origin')
    const { credential } = await register(u.cookie)
    const challenge = await loginChallenge()
    const wrong = await passkeyLogin(authn.get(credential, challenge, { origin: 'https://evil.example' }))
    expect(wrong.status).toBe(401)
    expect(wrong.json.error).toContain('passkey not accepted')
    // The challenge went with the failed attempt: the right origin now finds none.
    expect((await passkeyLogin(authn.get(credential, challenge))).status).toBe(401)
    expect((await passkeyLogin(authn.get(credential, await loginChallenge(), { userVerified: false }))).status).toBe(401)
    const failed = (await audit('login_failed')).filter((r) => r.includes(`"user_id":${u.id}`))
    expect(failed.length).toBe(3)
    // Recorded like password failures (per account and source).
    const attempts = await panel
      .db()
      .execute({ sql: 'SELECT count(*) AS n FROM login_attempts WHERE email = ? AND success = 0', args: [u.email] })
    expect(Number(attempts.rows[0]!.n)).toBe(3)
  })

  it('refuses an unknown key and a removed one', async () => {
    const u = await newUser('removed')
    const { res, credential } = await register(u.cookie)
    const stranger = authn.create({ challenge: 'x', user: { id: 'eA' } }).credential
    expect((await signInWith(stranger)).status).toBe(401)
    expect((await api(`/api/auth/passkeys/${res.json.id}`, 'DELETE', undefined, u.cookie)).status).toBe(204)
    expect((await signInWith(credential)).status).toBe(401)
  })

  it('answers 400 for a malformed response, changing nothing', async () => {
    const res = await passkeyLogin({ id: 'abc', type: 'public-key' })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/response/)
  })

  it('keeps at most 10 unanswered challenges per address: then 429 with Retry-After, until one is answered', async () => {
    const MAX_OPEN_LOGIN_CHALLENGES_PER_SOURCE = 10 // docs/access-control.md, "Login with a passkey"
    const u = await newUser('flood')
    const { credential } = await register(u.cookie)
    const options = () => api('/api/auth/passkeys/login/options', 'POST', {})
    const held: string[] = []
    let refused: PanelResponse | undefined
    // Every earlier test answered its challenges: this address holds none when the loop starts.
    for (let i = 0; i <= MAX_OPEN_LOGIN_CHALLENGES_PER_SOURCE && !refused; i++) {
      const res = await options()
      if (res.status === 200) held.push(res.json.challenge)
      else refused = res
    }
    expect(held.length).toBe(MAX_OPEN_LOGIN_CHALLENGES_PER_SOURCE)
    expect(refused?.status).toBe(429)
    expect(refused!.json.error).toBe(
      '10 passkey sign-ins started from this address are not finished: finish one, or wait until the oldest expires',
    )
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0)
    // An answer, accepted or not, frees its challenge's place, and only that one.
    expect((await passkeyLogin(authn.get(credential, held.shift()!, { origin: 'https://evil.example' }))).status).toBe(401)
    const again = await options()
    expect(again.status).toBe(200)
    held.push(again.json.challenge)
    expect((await options()).status).toBe(429)
    // The later tests sign in from this address too.
    for (const challenge of held) expect((await passkeyLogin(authn.get(credential, challenge))).status).toBe(200)
    expect((await options()).status).toBe(200)
  })
})

describe('passkey as the second step beside TOTP', () => {
  async function totpUser(name: string) {
    const u = await newUser(name)
    const setup = await api('/api/auth/totp/setup', 'POST', {}, u.cookie)
    registerTestSecret(setup.json.secret)
    const code = generateHOTP(decodeBase32IgnorePadding(setup.json.secret), BigInt(Math.floor(Date.now() / 30_000)), 6)
    const enabled = await api('/api/auth/totp/enable', 'POST', { code }, u.cookie)
    expect(enabled.status).toBe(200)
    for (const c of enabled.json.recovery_codes) registerTestSecret(c)
    return { ...u, cookie: sessionCookieOf(enabled)!, recoveryCodes: enabled.json.recovery_codes as string[] }
  }
  async function pending(email: string): Promise<string> {
    const res = await api('/api/auth/login', 'POST', { email, password: PASSWORD })
    expect(res.json).toEqual({ totp_pending: true })
    return res.headers
      .getSetCookie()
      .find((c) => c.startsWith('panel_totp_pending='))!
      .split(';')[0]!
  }
  const secondOptions = (cookie?: string) => panel.request('/api/auth/login/passkey/options', { method: 'POST', body: {}, cookie })
  const secondStep = (cookie: string, response: unknown) =>
    panel.request('/api/auth/login/passkey', { method: 'POST', body: { response }, cookie })

  it("completes the pending login with one of the account's passkeys, once", async () => {
    const u = await totpUser('second')
    const { credential } = await register(u.cookie)
    const p = await pending(u.email)
    const options = await secondOptions(p)
    expect(options.status).toBe(200)
    expect(options.json.allowCredentials.map((c: any) => c.id)).toEqual([credential.id])
    const done = await secondStep(p, authn.get(credential, options.json.challenge))
    expect(done.status).toBe(200)
    expect(done.json.user.email).toBe(u.email)
    expect(sessionCookieOf(done)).toBeDefined()
    expect((await audit('login')).some((r) => r.includes('"second_factor":"passkey"') && r.includes(`"user_id":${u.id}`))).toBe(true)
    // The pending login is used up.
    expect((await secondOptions(p)).status).toBe(401)
    expect((await secondOptions()).status).toBe(401)
  })

  it("refuses another user's key with a valid signature, and keeps recovery codes working", async () => {
    const victim = await totpUser('victim')
    await register(victim.cookie, 'Victim key')
    const attacker = await newUser('attacker')
    const { credential: attackerKey } = await register(attacker.cookie, 'Attacker key')
    const p = await pending(victim.email)
    const options = await secondOptions(p)
    const refused = await secondStep(p, authn.get(attackerKey, options.json.challenge))
    expect(refused.status).toBe(401)
    expect(sessionCookieOf(refused)).toBeUndefined()
    expect((await audit('login_totp_failed')).some((r) => r.includes('not a passkey of this account'))).toBe(true)
    // The pending login survives a refusal: a recovery code still completes it.
    const recovered = await panel.request('/api/auth/login/totp', { method: 'POST', body: { code: victim.recoveryCodes[0] }, cookie: p })
    expect(recovered.status).toBe(200)
    expect(recovered.json.user.email).toBe(victim.email)
  })

  it('is refused for an account without passkeys, and without a pending login', async () => {
    const u = await totpUser('nokeys')
    const p = await pending(u.email)
    expect((await secondOptions(p)).status).toBe(409)
    expect(
      (
        await secondStep('panel_totp_pending=nothing', {
          id: 'a',
          rawId: 'a',
          type: 'public-key',
          clientExtensionResults: {},
          response: { clientDataJSON: 'e30', authenticatorData: 'AA', signature: 'AA' },
        })
      ).status,
    ).toBe(401)
  })
})

describe('accounts', () => {
  it('deleting a user deletes their passkeys', async () => {
    const u = await newUser('deleted')
    const { credential } = await register(u.cookie)
    expect((await api(`/api/users/${u.id}`, 'DELETE', undefined, admin)).status).toBe(204)
    expect((await panel.db().execute({ sql: 'SELECT count(*) AS n FROM passkeys WHERE user_id = ?', args: [u.id] })).rows[0]!.n).toBe(0)
    expect((await signInWith(credential)).status).toBe(401)
  })
})

describe('backup restore', () => {
  // Last in the file: a restore ends every session.
  it('keeps the live keys of each user: one removed since stays removed, one added since stays', async () => {
    const u = await newUser('restored')
    const { res: removed, credential: lost } = await register(u.cookie, 'Lost phone')
    const { credential: kept } = await register(u.cookie, 'Laptop')
    const backup = await api('/api/backups', 'POST', undefined, admin)
    expect(backup.json.status).toBe('ok')
    expect((await api(`/api/auth/passkeys/${removed.json.id}`, 'DELETE', undefined, u.cookie)).status).toBe(204)
    const { credential: added } = await register(u.cookie, 'New key')
    const restore = await api(`/api/backups/${backup.json.id}/restore`, 'POST', undefined, admin)
    expect(restore.status, restore.text).toBe(200)
    expect((await signInWith(lost)).status).toBe(401)
    expect((await signInWith(kept)).status).toBe(200)
    expect((await signInWith(added)).status).toBe(200)
  })
})
