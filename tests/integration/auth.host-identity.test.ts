import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { ADMIN } from '../support/panel'

// Who may enter a protected host (docs/access-control.md, "Who may enter a protected host"),
// through the production Caddy: the panel's /auth/forward admits a signed-in user by the host's
// auth_allowed_users / auth_allowed_groups, a refused one gets the panel's 403 page (never a
// redirect to the login, which would loop), an admitted one reaches the upstream with the
// X-Auth-* identity headers, and the access row carries who it was.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let groupId: number
const PASSWORD = 'identity-password-123'
const ALICE = { email: 'alice@example.test', name: 'Alice', groups: ['ops', 'dev'] }
const BOB = { email: 'bob@example.test', name: 'Bob', groups: [] as string[] }
const CAROL = { email: 'carol@example.test', name: 'Carol', groups: ['finance'] }
const ids: Record<string, number> = {}
const cookies: Record<string, string> = {}
const TEAM = 'team.example.test'
const LISTED = 'listed.example.test'
const ANY = 'any.example.test'
const OPEN = 'open.example.test'

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  groupId = (await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  for (const user of [ALICE, BOB, CAROL]) {
    const res = await stack.panel.request('/api/users', {
      method: 'POST',
      cookie: stack.admin,
      body: { ...user, password: PASSWORD, role: 'viewer' },
    })
    expect(res.status, res.text).toBe(201)
    expect(res.json.groups).toEqual(user.groups)
    ids[user.email] = res.json.id
    cookies[user.email] = await stack.panel.login(user.email, PASSWORD)
  }
  const hosts: Record<string, unknown>[] = [
    { domain: TEAM, auth_required: true, auth_allowed_groups: ['ops'] },
    { domain: LISTED, auth_required: true, auth_allowed_users: [ids[BOB.email]] },
    { domain: ANY, auth_required: true },
    { domain: OPEN },
  ]
  for (const host of hosts) {
    const res = await createHost(stack, { target_group_id: groupId, ...host })
    expect(res.status, res.text).toBe(201)
  }
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

const viaProxy = (host: string, path: string, headers: Record<string, string> = {}) =>
  httpRequest({ port: stack.httpPort, host, path, headers })

/** A request through the proxy as this user; the upstream's count before it, to tell whether it was reached. */
async function asUser(email: string, host: string, path = '/', headers: Record<string, string> = {}) {
  const before = up.requests.length
  const res = await viaProxy(host, path, { cookie: cookies[email]!, ...headers })
  return { res, reached: up.requests.length > before, seen: up.requests.at(-1)?.headers ?? {} }
}

function expectRefusalPage(res: Awaited<ReturnType<typeof viaProxy>>, email: string, host: string) {
  expect(res.status).toBe(403)
  expect(res.headers.location).toBeUndefined()
  expect(String(res.headers['content-type'])).toMatch(/^text\/html/)
  expect(res.body).toContain(email)
  expect(res.body).toContain(`${host} does not let this account in`)
  // A way to switch account: the panel, whose menu signs out.
  expect(res.body).toContain('href="https://panel.example.test/"')
}

describe('users carry panel-local groups', () => {
  it('lists, validates and audits them; OIDC groups are shown read-only', async () => {
    const list = await stack.panel.request('/api/users', { cookie: stack.admin })
    const alice = (list.json as any[]).find((u) => u.email === ALICE.email)
    expect(alice).toMatchObject({ groups: ['ops', 'dev'], oidc_groups: [] })
    const bad = await stack.panel.request(`/api/users/${ids[BOB.email]}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { email: BOB.email, name: BOB.name, role: 'viewer', groups: ['a,b'] },
    })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^groups\.0: must not contain commas/)
    const groups = await stack.panel.request('/api/users/groups', { cookie: stack.admin })
    expect(groups.status).toBe(200)
    expect(groups.json).toEqual([
      { name: 'dev', local_users: 1, oidc_users: 0 },
      { name: 'finance', local_users: 1, oidc_users: 0 },
      { name: 'ops', local_users: 1, oidc_users: 0 },
    ])
    // Admin only.
    expect((await stack.panel.request('/api/users/groups', { cookie: cookies[ALICE.email] })).status).toBe(403)
    expect(await auditRaws('user_create')).toContainEqual(expect.objectContaining({ email: ALICE.email, groups: ['ops', 'dev'] }))
  })

  it('a host naming a user that does not exist is a 400 that changes nothing', async () => {
    const res = await createHost(stack, {
      domain: 'ghost.example.test',
      target_group_id: groupId,
      auth_required: true,
      auth_allowed_users: [99999],
    })
    expect(res.status).toBe(400)
    expect(res.json.error).toBe('auth_allowed_users: user 99999 does not exist; GET /api/users lists them')
    const hosts = await stack.panel.request('/api/hosts', { cookie: stack.admin })
    expect((hosts.json as any[]).map((h) => h.domain)).not.toContain('ghost.example.test')
  })
})

describe('auth_allowed_groups / auth_allowed_users at /auth/forward', () => {
  it("a user outside the host's groups gets the refusal page (403, no redirect to the login) and the upstream sees nothing", async () => {
    for (let i = 0; i < 2; i++) {
      // The second check is answered from the caches (the fast path): the same answer.
      const { res, reached } = await asUser(BOB.email, TEAM, '/admin')
      expectRefusalPage(res, BOB.email, TEAM)
      expect(reached).toBe(false)
    }
  })

  it('a user inside reaches the upstream with the identity headers; client-sent copies never do', async () => {
    const { res, reached, seen } = await asUser(ALICE.email, TEAM, '/admin', {
      'x-auth-user': 'admin',
      'x-auth-groups': 'root',
      x_auth_groups: 'root',
      'x-auth-email': ADMIN.email,
    })
    expect(res.status).toBe(200)
    expect(reached).toBe(true)
    expect(seen['x-auth-user']).toBe(ALICE.email)
    expect(seen['x-auth-email']).toBe(ALICE.email)
    expect(seen['x-auth-name']).toBe(ALICE.name)
    expect(seen['x-auth-groups']).toBe('ops,dev')
    expect(seen.x_auth_groups).toBeUndefined()
  })

  it('a user listed by id enters; one who is neither listed nor in a listed group does not', async () => {
    const bob = await asUser(BOB.email, LISTED)
    expect(bob.res.status).toBe(200)
    expect(bob.seen['x-auth-user']).toBe(BOB.email)
    // Bob has no group: the header is left out, and a client's copy does not take its place.
    expect(bob.seen['x-auth-groups']).toBeUndefined()
    expectRefusalPage((await asUser(ALICE.email, LISTED)).res, ALICE.email, LISTED)
  })

  it('both lists empty: any signed-in user enters; no session is still sent to the login', async () => {
    for (const email of [ALICE.email, BOB.email, CAROL.email]) expect((await asUser(email, ANY)).res.status, email).toBe(200)
    const anonymous = await viaProxy(ANY, '/')
    expect(anonymous.status).toBe(302)
    expect(String(anonymous.headers.location)).toMatch(/^https:\/\/panel\.example\.test\/login\?rd=/)
  })

  it('a host without ForwardAuth: a client sending X-Auth-User: admin never reaches the upstream with it', async () => {
    const before = up.requests.length
    const res = await viaProxy(OPEN, '/', {
      'x-auth-user': 'admin',
      x_auth_user: 'admin',
      'x-auth-email': ADMIN.email,
      'x-auth-groups': 'admins',
      'x-auth-name': 'Admin',
      'x-auth-provider': 'local',
    })
    expect(res.status).toBe(200)
    expect(up.requests.length).toBe(before + 1)
    const seen = up.requests.at(-1)!.headers
    expect(Object.keys(seen).filter((h) => /^x[-_]auth[-_]/i.test(h))).toEqual([])
  })
})

describe('the access row carries the user', () => {
  it('"who opened /admin on this host" is one filter: actor', async () => {
    const path = `/admin/who-${Date.now().toString(36)}`
    expect((await asUser(ALICE.email, TEAM, path)).res.status).toBe(200)
    const rows = await eventually(
      async () =>
        (
          await stack.panel.request(`/api/logs?source=caddy_access&actor=${encodeURIComponent(ALICE.email)}&host_domain=${TEAM}`, {
            cookie: stack.admin,
          })
        ).json as any[],
      (r) => r.some((x) => x.path === path),
    )
    const row = rows.find((x) => x.path === path)
    expect(row).toMatchObject({ actor: ALICE.email, host_domain: TEAM, status: 200 })
    expect(rows.every((x) => x.actor === ALICE.email)).toBe(true)
    // Another user's filter does not find it.
    const bob = await stack.panel.request(`/api/logs?source=caddy_access&actor=${encodeURIComponent(BOB.email)}`, { cookie: stack.admin })
    expect((bob.json as any[]).some((x) => x.path === path)).toBe(false)
  })
})

describe('changes take effect at the next check', () => {
  it("a user's group removed: refused on the next check (the cached session and answer are dropped)", async () => {
    expect((await asUser(ALICE.email, TEAM)).res.status).toBe(200)
    const res = await stack.panel.request(`/api/users/${ids[ALICE.email]}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { email: ALICE.email, name: ALICE.name, role: 'viewer', groups: ['dev'] },
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json.groups).toEqual(['dev'])
    expectRefusalPage((await asUser(ALICE.email, TEAM)).res, ALICE.email, TEAM)
    expect(await auditRaws('user_update')).toContainEqual(
      expect.objectContaining({ email: ALICE.email, groups_before: ['ops', 'dev'], groups: ['dev'] }),
    )
  })

  it("a host's list changed: the next check uses it (the host rules are read again)", async () => {
    expectRefusalPage((await asUser(CAROL.email, TEAM)).res, CAROL.email, TEAM)
    const res = await stack.panel.request(`/api/hosts/${await hostId(TEAM)}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { domain: TEAM, target_group_id: groupId, tls_mode: 'none', auth_required: true, auth_allowed_groups: ['finance'] },
    })
    expect(res.status, res.text).toBe(200)
    const carol = await asUser(CAROL.email, TEAM)
    expect(carol.res.status).toBe(200)
    expect(carol.seen['x-auth-groups']).toBe('finance')
    expectRefusalPage((await asUser(ALICE.email, TEAM)).res, ALICE.email, TEAM)
  })
})

async function hostId(domain: string): Promise<number> {
  return ((await stack.panel.request('/api/hosts', { cookie: stack.admin })).json as any[]).find((h) => h.domain === domain).id
}

async function auditRaws(action: string): Promise<Record<string, unknown>[]> {
  const r = await stack.panel
    .db()
    .execute({ sql: "SELECT raw FROM logs WHERE source = 'audit' AND message = ? ORDER BY id", args: [action] })
  return r.rows.map((row) => JSON.parse(String(row.raw)))
}
