import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { httpRequest } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { sessionApi } from '../support/api-client'

// Access lists through the production Caddy, from public-looking addresses in a
// network namespace: 198.51.100.10 sits in a denied range, 198.51.100.20 in an
// allowed one carved out of it.
const PASSWORD = 'correct-horse-battery-7'
const NEW_PASSWORD = 'second-staple-password-9'
registerTestSecret(PASSWORD, NEW_PASSWORD)

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let hostId: number
let listId: number

const body = (password: string | null = PASSWORD) => ({
  name: 'staff',
  realm: 'Staff only',
  default_action: 'allow',
  ip_rules: [
    { action: 'allow', source: '198.51.100.16/28' },
    { action: 'deny', source: '198.51.100.0/24' },
  ],
  users: [{ username: 'ann', ...(password === null ? {} : { password }) }],
})

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10', '198.51.100.20'] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const host = await createHost(stack, { domain: 'guarded.example.test', target_group_id: group.id })
  expect(host.status).toBe(201)
  hostId = host.json.id
  expect((await createHost(stack, { domain: 'open.example.test', target_group_id: group.id })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const from = (address: string, host: string, auth?: string) =>
  ns.curl(`http://198.51.100.1:${stack.httpPort}/inside`, ['-H', `Host: ${host}`, ...(auth ? ['-u', auth] : [])], { fromAddress: address })
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))

describe('access list through the production Caddy', () => {
  it('is created without echoing the password, and attached to a host', async () => {
    const created = await api('/api/access-lists', 'POST', body())
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: 'staff', users: [{ username: 'ann' }], host_ids: [], reconcile: { status: 'applied' } })
    expect(created.text).not.toMatch(/\$2[aby]\$/)
    listId = created.json.id
    const attached = await api(`/api/hosts/${hostId}/access-list`, 'PUT', { access_list_id: listId })
    expect(attached.status).toBe(200)
    expect(attached.json).toMatchObject({ host_id: hostId, access_list_id: listId, reconcile: { status: 'applied' } })
    expect((await api(`/api/access-lists/${listId}`)).json.host_ids).toEqual([hostId])
  })

  it('a source in the denied range gets 403, even with the right password, and the upstream sees nothing', async () => {
    const before = up.requests.length
    for (const auth of [undefined, `ann:${PASSWORD}`]) {
      const res = await from('198.51.100.10', 'guarded.example.test', auth)
      expect(res.status).toBe(403)
      // A new panel answers its page (docs/hosts.md, "Pages"), with the list's reason.
      expect(res.body).toMatch(/^403 Access denied.*\nAccess denied\n/)
    }
    expect(up.requests.length).toBe(before)
  })

  it('a source in the allowed range passes the IP rules and meets basic auth: none 401, wrong 401, right 200', async () => {
    const before = up.requests.length
    expect((await from('198.51.100.20', 'guarded.example.test')).status).toBe(401)
    expect((await from('198.51.100.20', 'guarded.example.test', 'ann:wrong-password-1')).status).toBe(401)
    expect((await from('198.51.100.20', 'guarded.example.test', `bob:${PASSWORD}`)).status).toBe(401)
    expect(up.requests.length).toBe(before)
    const ok = await from('198.51.100.20', 'guarded.example.test', `ann:${PASSWORD}`)
    expect(ok.status).toBe(200)
    expect(up.requests.at(-1)!.url).toBe('/inside')
  })

  it('the challenge names the realm', async () => {
    const res = await httpRequest({ port: stack.httpPort, host: 'guarded.example.test', path: '/' })
    expect(res.status).toBe(401)
    expect(res.headers['www-authenticate']).toBe('Basic realm="Staff only"')
  })

  it('a host without the list is untouched, from the denied range too', async () => {
    expect((await from('198.51.100.10', 'open.example.test')).status).toBe(200)
  })

  it('a list change reconciles at once: a new password, and the range moved to deny', async () => {
    const changed = await api(`/api/access-lists/${listId}`, 'PUT', {
      ...body(NEW_PASSWORD),
      ip_rules: [{ action: 'deny', source: '198.51.100.16/28' }],
    })
    expect(changed.status).toBe(200)
    expect(changed.json.reconcile.status).toBe('applied')
    expect((await from('198.51.100.20', 'guarded.example.test', `ann:${NEW_PASSWORD}`)).status).toBe(403)
    expect((await from('198.51.100.10', 'guarded.example.test', `ann:${PASSWORD}`)).status).toBe(401)
    expect((await from('198.51.100.10', 'guarded.example.test', `ann:${NEW_PASSWORD}`)).status).toBe(200)
  })

  it('a user sent without a password keeps the stored hash; a new user without one is refused and nothing changes', async () => {
    const kept = await api(`/api/access-lists/${listId}`, 'PUT', { ...body(null), ip_rules: [] })
    expect(kept.status).toBe(200)
    expect((await from('198.51.100.10', 'guarded.example.test', `ann:${NEW_PASSWORD}`)).status).toBe(200)
    const refused = await api(`/api/access-lists/${listId}`, 'PUT', { ...body(null), users: [{ username: 'ann' }, { username: 'carl' }] })
    expect(refused.status).toBe(400)
    expect(refused.json.error).toBe('users: "carl" is a new user and needs a password')
    expect((await api(`/api/access-lists/${listId}`)).json.users).toEqual([{ username: 'ann' }])
  })

  it('bad input is a 400 that names the field and changes nothing', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [
        { ...body(), ip_rules: [{ action: 'deny', source: '198.51.100.0/33' }] },
        /^ip_rules\.0\.source: must be an IP address or a CIDR range/,
      ],
      [{ ...body(), users: [{ username: 'ann', password: 'short' }] }, /^users\.0\.password: /],
      [{ ...body(), users: [{ username: 'a:b', password: PASSWORD }] }, /^users\.0\.username: /],
      [{ ...body(), realm: 'x" y' }, /^realm: /],
      [{ ...body(), default_action: 'maybe' }, /^default_action: /],
    ]
    for (const [b, message] of cases) {
      const res = await api('/api/access-lists', 'POST', b)
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(message)
    }
    expect((await api('/api/access-lists')).json).toHaveLength(1)
    expect((await api(`/api/hosts/${hostId}/access-list`, 'PUT', { access_list_id: 999 })).status).toBe(400)
  })

  it('the chain order holds in the real proxy: the LAN gate answers before the list, the rate limit before the password check', async () => {
    const group = (await api('/api/target-groups')).json[0]
    const lan = await api('/api/hosts', 'POST', {
      domain: 'lan-listed.example.test',
      target_group_id: group.id,
      tls_mode: 'none',
      lan_only: true,
    })
    const limited = await api('/api/hosts', 'POST', {
      domain: 'limited.example.test',
      target_group_id: group.id,
      tls_mode: 'none',
      rate_limit_enabled: true,
      rate_limit_rps: 1,
      rate_limit_burst: 1,
    })
    for (const h of [lan, limited]) {
      expect(h.status).toBe(201)
      expect((await api(`/api/hosts/${h.json.id}/access-list`, 'PUT', { access_list_id: listId })).status).toBe(200)
    }
    // 198.51.100.10 may pass the list (ann's password is right): the LAN gate refuses it first, with its own body.
    const gated = await from('198.51.100.10', 'lan-listed.example.test', `ann:${NEW_PASSWORD}`)
    expect(gated.status).toBe(403)
    expect(gated.body).toMatch(/\nAccess denied: LAN only\n/)
    // Guesses beyond rate + burst get 429 from the limiter without reaching basic auth (no bcrypt work for them).
    const statuses: number[] = []
    for (let i = 0; i < 6; i++) statuses.push((await from('198.51.100.10', 'limited.example.test', `ann:guess-${i}`)).status)
    expect(statuses.slice(0, 2)).toEqual([401, 401])
    expect(statuses.slice(2)).toContain(429)
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true)
    expect((await api(`/api/access-lists/${listId}`)).json.host_ids).toEqual([hostId, lan.json.id, limited.json.id])
    // Deleting a host detaches it.
    for (const h of [lan, limited]) expect((await api(`/api/hosts/${h.json.id}`, 'DELETE')).status).toBe(204)
    expect((await api(`/api/access-lists/${listId}`)).json.host_ids).toEqual([hostId])
    expect(Number((await stack.panel.db().execute('SELECT count(*) AS n FROM host_access_lists')).rows[0]!.n)).toBe(1)
  })

  it('a list in use cannot be deleted (409); detached, the host is open again and the list can go', async () => {
    expect((await api(`/api/access-lists/${listId}`, 'DELETE')).status).toBe(409)
    expect((await api(`/api/hosts/${hostId}/access-list`, 'PUT', { access_list_id: null })).status).toBe(200)
    expect((await from('198.51.100.10', 'guarded.example.test')).status).toBe(200)
    expect((await api(`/api/access-lists/${listId}`, 'DELETE')).status).toBe(204)
    expect((await api(`/api/access-lists/${listId}`)).status).toBe(404)
  })

  it('every change left an audit row, and no password (nor its base64 form) is in audit rows, logs or the panel output', async () => {
    const rows = (await stack.panel.db().execute("SELECT message, raw FROM logs WHERE source = 'audit'")).rows
    const actions = rows.map((r) => r.message)
    for (const a of ['access_list_create', 'host_access_list_set', 'access_list_update', 'access_list_delete']) expect(actions).toContain(a)
    const forms = [
      PASSWORD,
      NEW_PASSWORD,
      Buffer.from(`ann:${PASSWORD}`).toString('base64'),
      Buffer.from(`ann:${NEW_PASSWORD}`).toString('base64'),
    ]
    const everything = [
      JSON.stringify(rows),
      stack.panel.output(),
      ...readdirSync(stack.logDir).map((f) => readFileSync(join(stack.logDir, f), 'utf8')),
    ].join('\n')
    for (const f of forms) expect(everything).not.toContain(f)
    expect(JSON.stringify(rows)).not.toMatch(/\$2[aby]\$/)
  })
})
