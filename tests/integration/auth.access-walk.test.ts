import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { documentedOperations, exampleRequests, pathOf, type DocumentedOperation, type Fixtures } from '../support/openapi-walk'

// Access is declared once, beside each operation's schema (server/utils/openapi/areas/*.ts), and
// the access layer (server/middleware/10-auth.ts) enforces the declaration alone. This walk checks
// both halves against a policy written here independently of the registry: first that every
// declaration is the policy's, then that every operation answers each kind of caller as declared.
// Each request carries a query parameter no operation takes: a caller the declaration admits gets
// the route layer's 400 for it (so no handler runs and nothing changes), one it refuses a 401/403.

const VIEWER = { email: 'viewer.walk@example.test', password: 'viewer-walk-password-1' }
registerTestSecret(VIEWER.password)

// The policy. Anything not listed: a read is open to any session, a change needs an admin.
const PUBLIC = new Set([
  'GET /api/setup',
  'POST /api/setup',
  'POST /api/auth/login',
  'POST /api/auth/login/totp',
  'POST /api/auth/login/passkey/options',
  'POST /api/auth/login/passkey',
  'POST /api/auth/passkeys/login/options',
  'POST /api/auth/passkeys/login',
  'GET /api/auth/oidc/login',
  'GET /api/auth/oidc/callback',
  'GET /api/auth/providers',
  'GET /healthz',
  // Strict session mode's start of the code exchange: it reads the session itself and sends a browser without one to the login page.
  'GET /auth/forward/start',
])
/** The caller's own second factor and logout: any browser session, never a token. */
const BROWSER = new Set([
  'POST /api/auth/totp/setup',
  'POST /api/auth/totp/enable',
  'POST /api/auth/totp/disable',
  'POST /api/auth/totp/recovery-codes',
  // Passkeys are the caller's own way in, like TOTP: a token neither lists nor adds nor removes them.
  'GET /api/auth/passkeys',
  'POST /api/auth/passkeys/options',
  'POST /api/auth/passkeys',
  'PUT /api/auth/passkeys/{id}',
  'DELETE /api/auth/passkeys/{id}',
  'POST /api/auth/logout',
])
/** The caller's own API tokens: any browser session, or a token acting as admin. */
const OWN = new Set(['POST /api/tokens', 'DELETE /api/tokens/{id}'])
/** Reads that return secrets-bearing material (backups hold every hash and sealed secret) or other users' accounts. */
// GET /api/users/groups: how the users are grouped is part of their accounts.
const ADMIN_READS = new Set([
  'GET /api/backups',
  'GET /api/backups/{id}/download',
  'GET /api/users',
  'GET /api/users/{id}',
  'GET /api/users/groups',
])
const PROXY = new Set(['GET /auth/forward', 'GET /auth/forward/callback'])

function policyOf(key: string): string {
  if (PUBLIC.has(key)) return 'public'
  if (BROWSER.has(key)) return 'browser'
  if (OWN.has(key)) return 'own'
  if (PROXY.has(key)) return 'proxy'
  if (ADMIN_READS.has(key)) return 'admin'
  return key.startsWith('GET ') ? 'session' : 'admin'
}

type Caller = 'anonymous' | 'viewer' | 'read token' | 'admin token' | 'admin'

/** What the access layer should answer: `pass`, or the refusal's status. */
function expectedFor(access: string, caller: Caller): 'pass' | 401 | 403 {
  if (access === 'public') return 'pass'
  if (caller === 'anonymous') return 401
  const token = caller.endsWith('token')
  const admin = caller === 'admin' || caller === 'admin token'
  if (access === 'session') return 'pass'
  if (access === 'browser') return token ? 403 : 'pass'
  if (access === 'own') return token && !admin ? 403 : 'pass'
  return admin ? 'pass' : 403
}

let panel: PanelHandle
const credentials = {} as Record<Caller, { cookie?: string; headers?: Record<string, string> }>

async function tokenOf(cookie: string, scope: 'read' | 'admin'): Promise<Record<string, string>> {
  const res = await panel.request('/api/tokens', { method: 'POST', cookie, body: { name: `walk ${scope}`, scope } })
  expect(res.status, res.text).toBe(201)
  registerTestSecret(res.json.secret)
  return { authorization: `Bearer ${res.json.secret}` }
}

beforeAll(async () => {
  panel = await startPanel()
  const admin = await panel.login()
  const viewer = await panel.request('/api/users', { method: 'POST', cookie: admin, body: { ...VIEWER, role: 'viewer' } })
  expect(viewer.status, viewer.text).toBe(201)
  credentials.anonymous = {}
  credentials.admin = { cookie: admin }
  credentials.viewer = { cookie: await panel.login(VIEWER.email, VIEWER.password) }
  credentials['read token'] = { headers: await tokenOf(admin, 'read') }
  credentials['admin token'] = { headers: await tokenOf(admin, 'admin') }
})
afterAll(async () => {
  await panel?.stop()
})

// Path parameters only (the request never reaches a handler): any well-formed value will do.
const ids = Object.fromEntries(
  ['groupId', 'hostId', 'ruleId', 'userId', 'channelId', 'notificationRuleId', 'accessListId', 'streamId'].map((k) => [k, 1]),
) as unknown as Fixtures
const examples = exampleRequests({ ...ids, npmDatabase: Buffer.alloc(0) })
const operations = documentedOperations()

describe('access declared once', () => {
  it('every declaration is the policy: reads open to a session, changes and secrets-bearing reads to an admin', () => {
    const differing = operations
      .map((o) => `${o.method} ${o.template}`)
      .map((key, i) => [key, operations[i]!.access, policyOf(key)] as const)
      .filter(([, declared, wanted]) => declared !== wanted)
      .map(([key, declared, wanted]) => `${key}: declared ${declared}, the policy says ${wanted}`)
    expect(differing).toEqual([])
  })

  const walked = operations.filter((o) => o.access !== 'proxy')
  it.each(walked.map((o) => [`${o.method} ${o.template}`, o] as const))('%s', async (key, op: DocumentedOperation) => {
    // The OIDC redirects take any query (the identity provider adds its own), and the paths outside /api answer before
    // reading theirs (the code exchange is off in the default mode: 404): their answer is only checked not to be a refusal.
    const strictQuery = op.template.startsWith('/api/') && !op.template.startsWith('/api/auth/oidc/')
    const ex = examples[key]!
    const path = pathOf(op, ex.params, strictQuery ? { ...ex.query, walk_access: '1' } : ex.query)
    const seen: string[] = []
    const wanted: string[] = []
    for (const caller of Object.keys(credentials) as Caller[]) {
      const res = await panel.request(path, { method: op.method, ...credentials[caller] })
      const expected = expectedFor(op.access, caller)
      const passed = strictQuery
        ? res.status === 400 && /^query: unknown parameter "walk_access"/.test(res.json?.error)
        : ![401, 403].includes(res.status)
      seen.push(`${caller}: ${passed ? 'pass' : res.status}`)
      wanted.push(`${caller}: ${expected}`)
      if (!passed) expect(res.json, `${key} as ${caller}`).toEqual({ error: expect.any(String) })
    }
    expect(seen, `${key} (declared ${op.access})`).toEqual(wanted)
  })

  it('paths and methods nothing declares: the answers of before the declarations', async () => {
    const ask = async (caller: Caller, method: string, path: string) =>
      (await panel.request(path, { method, ...credentials[caller] })).status
    // An anonymous caller learns nothing about a path that needs a session...
    expect(await ask('anonymous', 'GET', '/api/no-such-thing')).toBe(401)
    expect(await ask('anonymous', 'DELETE', '/api/hosts')).toBe(401)
    // ...and a public path's methods.
    expect(await ask('anonymous', 'GET', '/api/auth/login')).toBe(405)
    expect(await ask('viewer', 'GET', '/api/no-such-thing')).toBe(404)
    expect(await ask('viewer', 'POST', '/api/no-such-thing')).toBe(403)
    expect(await ask('admin', 'POST', '/api/no-such-thing')).toBe(404)
    expect(await ask('viewer', 'DELETE', '/api/hosts')).toBe(403)
    expect(await ask('admin', 'DELETE', '/api/hosts')).toBe(405)
    // A viewer may change their own tokens, so learns which methods the path serves.
    expect(await ask('viewer', 'DELETE', '/api/tokens')).toBe(405)
    expect(await ask('read token', 'DELETE', '/api/tokens')).toBe(403)
    expect(await ask('read token', 'PUT', '/api/auth/logout')).toBe(403)
    expect(await ask('viewer', 'PUT', '/api/auth/logout')).toBe(405)
    // A malformed parameter is judged after the access: a viewer's change is refused first.
    expect(await ask('viewer', 'PUT', '/api/hosts/abc')).toBe(403)
    expect(await ask('anonymous', 'GET', '/api/hosts/abc')).toBe(401)
    expect(await ask('viewer', 'GET', '/api/hosts/abc')).toBe(400)
  })
})
