import { execFileSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CUSTOM_HANDLER_MODULES } from '../../server/utils/proxy/build/custom-handlers'
import { startTestUpstream } from '../support/upstream'
import { createPublicClientNamespace } from '../support/netns'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// The escape hatch (docs/hosts.md, "Custom handlers"): raw Caddy handlers on one host,
// through the production Caddy, requested from a client in a network namespace.

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let ns: Awaited<ReturnType<typeof createPublicClientNamespace>>
let hostId: number
let groupId: number

const HATCH = {
  handler: 'subroute',
  routes: [{ match: [{ path: ['/hatch'] }], handle: [{ handler: 'static_response', status_code: 200, body: 'from the escape hatch' }] }],
}
const TAG = { handler: 'headers', response: { set: { 'X-Hatch': ['on'] } } }

const req = (path: string, opts: { method?: string; body?: unknown } = {}) => stack.panel.request(path, { ...opts, cookie: stack.admin })
const put = (body: Record<string, unknown>) =>
  req(`/api/hosts/${hostId}`, {
    method: 'PUT',
    body: { domain: 'hatch.example.test', target_group_id: groupId, tls_mode: 'none', ...body },
  })
const get = (host: string, path: string) => ns.curl(`http://198.51.100.1:${stack.httpPort}${path}`, ['-i', '-H', `Host: ${host}`])
const proxyConfig = async () => (await fetch(`${stack.caddy.adminUrl}/config/`)).text()
const auditCount = async () => Number((await stack.panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'audit'")).rows[0]!.n)

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: '198.51.100.1', clientAddresses: ['198.51.100.10'] })
  stack = await startProxyStack({ httpListenExtra: ['198.51.100.1'] })
  groupId = (await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const created = await createHost(stack, { domain: 'hatch.example.test', target_group_id: groupId })
  expect(created.status).toBe(201)
  expect(created.json.custom_handler_count).toBe(0)
  hostId = created.json.id
  expect((await createHost(stack, { domain: 'other.example.test', target_group_id: groupId })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

describe('custom handlers through the production Caddy', () => {
  it('every module the panel allows is one the production build has (caddy list-modules)', () => {
    const bin = process.env.PANEL_TEST_CADDY_BIN
    expect(bin, 'PANEL_TEST_CADDY_BIN (scripts/test.sh exports it)').toBeTruthy()
    const modules = new Set(execFileSync(bin!, ['list-modules'], { encoding: 'utf8' }).split('\n'))
    for (const name of CUSTOM_HANDLER_MODULES) expect(modules.has(`http.handlers.${name}`), name).toBe(true)
  })

  it('a valid snippet is served: a static answer under its path, a response header on what goes upstream', async () => {
    const res = await put({ custom_handlers: [HATCH, TAG], custom_handlers_at: 'before_proxy' })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({ custom_handler_count: 2, custom_handlers_at: 'before_proxy', reconcile: { status: 'applied' } })
    expect((await req(`/api/hosts/${hostId}`)).json.custom_handlers).toEqual([HATCH, TAG])

    const hatch = await get('hatch.example.test', '/hatch')
    expect(hatch.status).toBe(200)
    expect(hatch.body).toContain('from the escape hatch')
    const before = up.requests.length
    const proxied = await get('hatch.example.test', '/app')
    expect(proxied.status).toBe(200)
    expect(proxied.body).toMatch(/^x-hatch: on\r?$/im)
    expect(up.requests.length).toBe(before + 1)
    // The other host does not carry them.
    const other = await get('other.example.test', '/hatch')
    expect(other.status).toBe(200)
    expect(other.body).not.toMatch(/x-hatch|escape hatch/i)
  })

  it("a snippet the proxy refuses (an unknown field) is a 400 with the proxy's words; nothing saved, nothing pushed", async () => {
    const config = await proxyConfig()
    const audits = await auditCount()
    const res = await put({ custom_handlers: [{ handler: 'headers', no_such_field: true }] })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(
      /^custom_handlers: the proxy refused the configuration with these handlers; nothing was saved or pushed\. The proxy said: .*no_such_field/,
    )
    expect(await proxyConfig()).toBe(config)
    expect(await auditCount()).toBe(audits)
    expect((await req(`/api/hosts/${hostId}`)).json.custom_handlers).toEqual([HATCH, TAG])
    expect((await get('hatch.example.test', '/hatch')).body).toContain('from the escape hatch')
    expect((await get('other.example.test', '/x')).status).toBe(200)
  })

  it('a forbidden module is refused by name, also nested in a subroute, before the proxy is asked', async () => {
    const config = await proxyConfig()
    const direct = await put({ custom_handlers: [{ handler: 'file_server', root: '/' }] })
    expect(direct.status).toBe(400)
    expect(direct.json.error).toMatch(/custom_handlers: handler 1: the module "file_server" is not allowed in custom handlers; allowed: /)
    const nested = await put({
      custom_handlers: [
        TAG,
        { handler: 'subroute', routes: [{ handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: stack.caddy.adminListen }] }] }] },
      ],
    })
    expect(nested.status).toBe(400)
    expect(nested.json.error).toMatch(/custom_handlers: handler 2: the module "reverse_proxy" is not allowed/)
    const secret = await put({ custom_handlers: [{ handler: 'static_response', body: '{env.HOME}' }] })
    expect(secret.status).toBe(400)
    expect(secret.json.error).toMatch(/\{env\.\*\} and \{file\.\*\} are refused/)
    expect(await proxyConfig()).toBe(config)
  })

  it('the change is a revision whose diff shows it, and reverting it takes the handlers out of the proxy', async () => {
    const [latest, previous] = (await req('/api/revisions')).json as { id: number }[]
    const diff = await req(`/api/revisions/diff?from=${previous!.id}&to=${latest!.id}`)
    expect(diff.status).toBe(200)
    expect(JSON.stringify(diff.json.changes)).toContain('custom_handlers')
    expect(JSON.stringify(diff.json.config_diff)).toContain('from the escape hatch')

    const revert = await req(`/api/revisions/${previous!.id}/revert`, { method: 'POST' })
    expect(revert.status, revert.text).toBe(200)
    expect((await req(`/api/hosts/${hostId}`)).json).toMatchObject({ custom_handlers: [], custom_handler_count: 0 })
    const hatch = await get('hatch.example.test', '/hatch')
    expect(hatch.status).toBe(200)
    expect(hatch.body).not.toMatch(/x-hatch|escape hatch/i)
  })

  it('after_security: the handlers run after the gates; a LAN-only host still refuses the public client first', async () => {
    const res = await put({ custom_handlers: [HATCH], custom_handlers_at: 'after_security', lan_only: true })
    expect(res.status, res.text).toBe(200)
    const refused = await get('hatch.example.test', '/hatch')
    expect(refused.status).toBe(403)
    expect(refused.body).not.toContain('escape hatch')
    expect((await put({ custom_handlers: [HATCH], custom_handlers_at: 'after_security', lan_only: false })).status).toBe(200)
    expect((await get('hatch.example.test', '/hatch')).body).toContain('from the escape hatch')
  })

  it('a viewer cannot set them', async () => {
    const viewerUser = { email: 'viewer@example.test', password: 'a-long-viewer-password-1' }
    const users = await req('/api/users', { method: 'POST', body: { ...viewerUser, role: 'viewer' } })
    expect(users.status, users.text).toBe(201)
    const viewer = await stack.panel.login(viewerUser.email, viewerUser.password)
    const res = await stack.panel.request(`/api/hosts/${hostId}`, {
      method: 'PUT',
      cookie: viewer,
      body: { domain: 'hatch.example.test', target_group_id: groupId, tls_mode: 'none', custom_handlers: [TAG] },
    })
    expect(res.status).toBe(403)
  })
})
