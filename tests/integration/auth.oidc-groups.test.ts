import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { registerTestSecret, sessionCookieOf, startPanel, type PanelHandle, type PanelResponse } from '../support/panel'
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider'

// OIDC groups to roles (docs/access-control.md "OIDC groups to roles") against the suite's real
// identity provider, whose id_tokens carry the accounts' group claims: the role follows the
// mapping at every login, a group mapped to none or missing from the allowed list refuses the
// login with no session, and a group removed at the provider ends the user's other sessions.

const PUBLIC_URL = 'https://panel.example.test'
const REDIRECT_URI = `${PUBLIC_URL}/api/auth/oidc/callback`

let panel: PanelHandle
let idp: TestOidcProvider
let admin: string

async function putSettings(body: Record<string, unknown>): Promise<PanelResponse> {
  return panel.request('/api/settings', { method: 'PUT', cookie: admin, body })
}

beforeAll(async () => {
  idp = await startOidcProvider({ redirectUri: REDIRECT_URI })
  registerTestSecret(idp.clientSecret)
  panel = await startPanel({ env: { PANEL_DOMAIN: 'panel.example.test', PANEL_PUBLIC_URL: PUBLIC_URL } })
  admin = await panel.login()
  const res = await putSettings({ 'oidc.issuer': idp.issuer, 'oidc.client_id': idp.clientId, 'oidc.client_secret': idp.clientSecret })
  expect(res.status).toBe(200)
})
afterAll(async () => {
  await panel?.stop()
  await idp?.stop()
})

beforeEach(async () => {
  const res = await putSettings({ 'oidc.groups_claim': 'groups', 'oidc.group_roles': {}, 'oidc.allowed_groups': [] })
  expect(res.status).toBe(200)
})

/** A whole browser login as `sub`: the panel's login, the provider's redirects, the callback with the login cookie. */
async function loginAs(sub: string): Promise<PanelResponse> {
  idp.nextAccount = sub
  const start = await panel.request('/api/auth/oidc/login')
  expect(start.status).toBe(302)
  const loginCookie = start.headers
    .getSetCookie()
    .find((c) => /^(__Host-)?panel_oidc=./.test(c))!
    .split(';')[0]!
  const callback = await idp.authorize(start.headers.get('location')!)
  return panel.request(`${callback.pathname}${callback.search}`, { cookie: loginCookie })
}

async function signedIn(sub: string): Promise<string> {
  const res = await loginAs(sub)
  expect(res.status).toBe(302)
  expect(res.headers.get('location')).not.toMatch(/oidc_error/)
  return sessionCookieOf(res)!
}

function refusalCode(res: PanelResponse): string | null {
  expect(res.status).toBe(302)
  expect(sessionCookieOf(res)).toBeUndefined()
  return new URL(res.headers.get('location')!, PUBLIC_URL).searchParams.get('oidc_error')
}

async function userRow(email: string) {
  const r = (await panel.db().execute({ sql: 'SELECT id, role, oidc_groups FROM users WHERE email = ?', args: [email] })).rows[0]
  return r ? { id: Number(r.id), role: String(r.role), oidcGroups: JSON.parse(String(r.oidc_groups)) } : undefined
}

async function sessionsOf(email: string): Promise<number> {
  const r = await panel.db().execute({
    sql: 'SELECT count(*) AS n FROM sessions JOIN users ON users.id = sessions.user_id WHERE users.email = ?',
    args: [email],
  })
  return Number(r.rows[0]!.n)
}

async function auditRows(message: string, email: string) {
  return (
    await panel.db().execute({ sql: "SELECT actor, raw FROM logs WHERE source = 'audit' AND message = ? ORDER BY id", args: [message] })
  ).rows
    .map((r) => ({ actor: String(r.actor), ...JSON.parse(String(r.raw)) }))
    .filter((r) => r.email === email)
}

const roleOfSession = async (cookie: string) => (await panel.request('/api/auth/session', { cookie })).json?.user?.role

describe('OIDC groups to roles', () => {
  it('a group mapped to admin makes an admin at the first login, with an audit row by the mapping; the groups are stored', async () => {
    idp.accounts.set('sub-ada', { email: 'ada@example.test', email_verified: true, groups: ['panel-admins', 'staff'] })
    expect((await putSettings({ 'oidc.group_roles': { 'panel-admins': 'admin', staff: 'viewer' } })).status).toBe(200)
    const cookie = await signedIn('sub-ada')
    expect(await roleOfSession(cookie)).toBe('admin')
    expect(await userRow('ada@example.test')).toMatchObject({ role: 'admin', oidcGroups: ['panel-admins', 'staff'] })
    const [change] = await auditRows('oidc_role_change', 'ada@example.test')
    expect(change).toMatchObject({ actor: 'system:oidc-mapping', from: 'viewer', to: 'admin', matched: ['panel-admins'] })
  })

  it('a group mapped to viewer makes a viewer; a user in no mapped group is a viewer', async () => {
    idp.accounts.set('sub-vic', { email: 'vic@example.test', email_verified: true, groups: 'staff' })
    idp.accounts.set('sub-una', { email: 'una@example.test', email_verified: true, groups: ['elsewhere'] })
    await putSettings({ 'oidc.group_roles': { 'panel-admins': 'admin', staff: 'viewer' } })
    expect(await roleOfSession(await signedIn('sub-vic'))).toBe('viewer')
    expect(await userRow('vic@example.test')).toMatchObject({ oidcGroups: ['staff'] })
    expect(await roleOfSession(await signedIn('sub-una'))).toBe('viewer')
    expect(await auditRows('oidc_role_change', 'vic@example.test')).toEqual([])
  })

  it('a group mapped to none refuses the login: no session, a clear code, an audit row; none beats admin', async () => {
    idp.accounts.set('sub-nox', { email: 'nox@example.test', email_verified: true, groups: ['panel-admins', 'suspended'] })
    await putSettings({ 'oidc.group_roles': { 'panel-admins': 'admin', suspended: 'none' } })
    expect(refusalCode(await loginAs('sub-nox'))).toBe('group_refused')
    expect(await sessionsOf('nox@example.test')).toBe(0)
    expect(await userRow('nox@example.test')).toMatchObject({ role: 'viewer', oidcGroups: ['panel-admins', 'suspended'] })
    const [row] = await auditRows('oidc_group_refused', 'nox@example.test')
    expect(row).toMatchObject({ code: 'group_refused', refused_by: ['suspended'] })
  })

  it('the allowed groups: a user in none of them is refused, a user in one signs in; empty lets anyone in', async () => {
    idp.accounts.set('sub-out', { email: 'out@example.test', email_verified: true, groups: ['contractors'] })
    idp.accounts.set('sub-in', { email: 'in@example.test', email_verified: true, groups: ['contractors', 'family'] })
    idp.accounts.set('sub-none', { email: 'none@example.test', email_verified: true })
    await putSettings({ 'oidc.allowed_groups': ['family', 'staff'] })
    expect(refusalCode(await loginAs('sub-out'))).toBe('group_not_allowed')
    expect(refusalCode(await loginAs('sub-none'))).toBe('group_not_allowed')
    expect(await sessionsOf('out@example.test')).toBe(0)
    expect((await auditRows('oidc_group_not_allowed', 'out@example.test')).length).toBe(1)
    expect(await roleOfSession(await signedIn('sub-in'))).toBe('viewer')
    await putSettings({ 'oidc.allowed_groups': [] })
    await signedIn('sub-out')
  })

  it('a group removed at the provider takes effect at the next login and ends the other sessions; losing access ends them all', async () => {
    idp.accounts.set('sub-rem', { email: 'rem@example.test', email_verified: true, groups: ['panel-admins', 'family'] })
    await putSettings({
      'oidc.group_roles': { 'panel-admins': 'admin', family: 'viewer' },
      'oidc.allowed_groups': ['family', 'panel-admins'],
    })
    const laptop = await signedIn('sub-rem')
    const phone = await signedIn('sub-rem')
    expect(await roleOfSession(laptop)).toBe('admin')
    expect(await roleOfSession(phone)).toBe('admin')
    // A script's admin token, made while the user was an admin.
    const made = await panel.request('/api/tokens', { method: 'POST', cookie: laptop, body: { name: 'deploy', scope: 'admin' } })
    expect(made.status).toBe(201)
    registerTestSecret(made.json.secret)
    const bearer = { authorization: `Bearer ${made.json.secret}` }
    expect((await panel.request('/api/settings', { method: 'PUT', headers: bearer, body: {} })).status).toBe(200)

    idp.accounts.set('sub-rem', { email: 'rem@example.test', email_verified: true, groups: ['family'] })
    const tablet = await signedIn('sub-rem')
    expect(await roleOfSession(tablet)).toBe('viewer')
    expect((await panel.request('/api/auth/session', { cookie: laptop })).status).toBe(401)
    expect((await panel.request('/api/auth/session', { cookie: phone })).status).toBe(401)
    expect(await sessionsOf('rem@example.test')).toBe(1)
    expect(await userRow('rem@example.test')).toMatchObject({ role: 'viewer', oidcGroups: ['family'] })
    const changes = await auditRows('oidc_role_change', 'rem@example.test')
    expect(changes.at(-1)).toMatchObject({
      actor: 'system:oidc-mapping',
      from: 'admin',
      to: 'viewer',
      sessions_ended: 2,
      api_tokens_narrowed: 1,
    })
    // The token narrowed to read: it still reads, it no longer changes anything.
    expect((await panel.request('/api/hosts', { headers: bearer })).status).toBe(200)
    expect((await panel.request('/api/settings', { method: 'PUT', headers: bearer, body: {} })).status).toBe(403)

    idp.accounts.set('sub-rem', { email: 'rem@example.test', email_verified: true, groups: [] })
    expect(refusalCode(await loginAs('sub-rem'))).toBe('group_not_allowed')
    expect((await panel.request('/api/auth/session', { cookie: tablet })).status).toBe(401)
    expect(await sessionsOf('rem@example.test')).toBe(0)
    expect((await auditRows('oidc_group_not_allowed', 'rem@example.test')).at(-1)).toMatchObject({
      sessions_ended: 1,
      api_tokens_revoked: 1,
    })
    expect((await panel.request('/api/hosts', { headers: bearer })).status).toBe(401)
  })

  it('the claim is configurable: a string in another claim, or a nested list by a dotted name', async () => {
    idp.accounts.set('sub-kc', {
      email: 'kc@example.test',
      email_verified: true,
      roles: 'ops',
      realm_access: { roles: ['panel-admins'] },
    })
    await putSettings({ 'oidc.groups_claim': 'roles', 'oidc.group_roles': { ops: 'viewer', 'panel-admins': 'admin' } })
    expect(await roleOfSession(await signedIn('sub-kc'))).toBe('viewer')
    expect(await userRow('kc@example.test')).toMatchObject({ oidcGroups: ['ops'] })
    await putSettings({ 'oidc.groups_claim': 'realm_access.roles' })
    expect(await roleOfSession(await signedIn('sub-kc'))).toBe('admin')
    expect(await userRow('kc@example.test')).toMatchObject({ oidcGroups: ['panel-admins'] })
  })

  it('without a mapping a role edited by hand is kept, and the groups are still stored', async () => {
    idp.accounts.set('sub-hand', { email: 'hand@example.test', email_verified: true, groups: ['family'] })
    await signedIn('sub-hand')
    const user = (await userRow('hand@example.test'))!
    expect(user.role).toBe('viewer')
    const put = await panel.request(`/api/users/${user.id}`, {
      method: 'PUT',
      cookie: admin,
      body: { email: 'hand@example.test', name: '', role: 'admin' },
    })
    expect(put.status).toBe(200)
    idp.accounts.set('sub-hand', { email: 'hand@example.test', email_verified: true, groups: ['family', 'friends'] })
    expect(await roleOfSession(await signedIn('sub-hand'))).toBe('admin')
    expect(await userRow('hand@example.test')).toMatchObject({ role: 'admin', oidcGroups: ['family', 'friends'] })
  })

  it('bad values are a 400 naming the setting, and change nothing', async () => {
    const before = (await panel.request('/api/settings', { cookie: admin })).json
    for (const [key, value, words] of [
      ['oidc.group_roles', { staff: 'owner' }, 'must be admin, viewer or none'],
      ['oidc.group_roles', ['staff'], ''],
      ['oidc.group_roles', { 'a,b': 'viewer' }, 'commas'],
      ['oidc.allowed_groups', 'staff', ''],
      ['oidc.allowed_groups', ['staff', 'staff'], 'must not repeat'],
      ['oidc.groups_claim', '', 'must name the claim'],
      ['oidc.groups_claim', 'my groups', 'without spaces'],
    ] as const) {
      const res = await putSettings({ 'oidc.group_roles': { staff: 'viewer' }, [key]: value })
      expect([key, res.status]).toEqual([key, 400])
      expect(res.json.error).toContain(key)
      expect(res.json.error).toContain(words)
    }
    expect((await panel.request('/api/settings', { cookie: admin })).json).toEqual(before)
  })

  it('the mapping never demotes the last admin: the login keeps the role and says so in the audit log', async () => {
    idp.accounts.set('sub-boss', { email: 'boss@example.test', email_verified: true, groups: ['panel-admins'] })
    await putSettings({ 'oidc.group_roles': { 'panel-admins': 'admin', family: 'viewer' } })
    const boss = await signedIn('sub-boss')
    expect(await roleOfSession(boss)).toBe('admin')
    // Every other admin steps down (through Users): the OIDC user is the only admin left.
    const others = (
      (await panel.request('/api/users', { cookie: boss })).json as Array<{ id: number; email: string; name: string; role: string }>
    ).filter((u) => u.role === 'admin' && u.email !== 'boss@example.test')
    const setRole = (u: (typeof others)[number], role: string) =>
      panel.request(`/api/users/${u.id}`, { method: 'PUT', cookie: boss, body: { email: u.email, name: u.name, role } })
    for (const u of others) expect((await setRole(u, 'viewer')).status).toBe(200)
    try {
      idp.accounts.set('sub-boss', { email: 'boss@example.test', email_verified: true, groups: ['family'] })
      const again = await signedIn('sub-boss')
      expect(await roleOfSession(again)).toBe('admin')
      expect((await auditRows('oidc_role_mapping_skipped', 'boss@example.test')).at(-1)).toMatchObject({
        actor: 'system:oidc-mapping',
        reason: 'last_admin',
        would_be: 'viewer',
      })
    } finally {
      for (const u of others) expect((await setRole(u, 'admin')).status).toBe(200)
      admin = await panel.login()
    }
    // With another admin again, the next login applies the mapping.
    expect(await roleOfSession(await signedIn('sub-boss'))).toBe('viewer')
  })

  it('no answer, audit row or stored setting shows the client secret', async () => {
    const settings = await panel.request('/api/settings', { cookie: admin })
    expect(settings.json['oidc.client_secret']).toBe('__SET__')
    expect(settings.text).not.toContain(idp.clientSecret)
    const audit = (await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit'")).rows.map((r) => String(r.raw)).join('\n')
    expect(audit).toContain('oidc_role_change')
    expect(audit).not.toContain(idp.clientSecret)
  })
})
