import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpRequest } from '../support/http'
import { ADMIN, registerTestSecret } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// Compatibility: the panel still drives Debian's stock Caddy 2.6.2 (no plugins)
// with PROXY_MODULES=none. Every other proxy test runs the production Caddy.

let stack: ProxyStack
registerTestSecret('compat-password-1')
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack({ stockCaddy: true })
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe("Debian's stock Caddy with PROXY_MODULES=none", () => {
  it('runs the stock binary', async () => {
    const config = (await stack.caddy.getConfig()) as { apps?: unknown }
    expect(stack.caddy.bin).toBe('/usr/bin/caddy')
    expect(config).toBeTruthy()
  })

  it('loads a host with every plugin feature asked for, applies what it can and says what it cannot', async () => {
    const group = await createGroup(stack, { name: 'compat', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const res = await createHost(stack, {
      domain: 'compat.example.test',
      target_group_id: group.id,
      lan_only: true,
      auth_required: false,
      waf_enabled: true,
      rate_limit_enabled: true,
      rate_limit_rps: 5,
      rate_limit_burst: 5,
    })
    expect(res.status, res.text).toBe(201)
    expect(res.json.reconcile.status).toBe('applied')
    const warnings: string[] = res.json.reconcile.warnings ?? []
    expect(warnings.join('\n')).toMatch(/no waf module/)
    expect(warnings.join('\n')).toMatch(/no ratelimit module/)
    expect(warnings.join('\n')).toMatch(/no crowdsec module/)
    const held = JSON.stringify(await stack.caddy.getConfig())
    for (const handler of ['"crowdsec"', '"waf"', '"rate_limit"']) expect(held).not.toContain(`"handler":${handler}`)
  })

  it('proxies to the upstream, with the LAN gate passing loopback', async () => {
    const res = await httpRequest({ port: stack.httpPort, host: 'compat.example.test', path: '/compat' })
    expect(res.status).toBe(200)
    expect(up.requests.at(-1)!.url).toBe('/compat')
  })

  it('applies an access list (base64 bcrypt hash, hash cache, IP rules): 401 without the password, 200 with it', async () => {
    const api = (path: string, method: string, body: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })
    const list = await api('/api/access-lists', 'POST', {
      name: 'compat',
      ip_rules: [{ action: 'deny', source: '198.51.100.0/24' }],
      users: [{ username: 'ann', password: 'compat-password-1' }],
    })
    expect(list.status).toBe(201)
    const host = (await api('/api/hosts', 'GET', undefined)).json.find((h: any) => h.domain === 'compat.example.test')
    const attached = await api(`/api/hosts/${host.id}/access-list`, 'PUT', { access_list_id: list.json.id })
    expect(attached.json.reconcile.status).toBe('applied')
    expect((await httpRequest({ port: stack.httpPort, host: 'compat.example.test', path: '/' })).status).toBe(401)
    const auth = { authorization: `Basic ${Buffer.from('ann:compat-password-1').toString('base64')}` }
    expect((await httpRequest({ port: stack.httpPort, host: 'compat.example.test', path: '/', headers: auth })).status).toBe(200)
  })

  it("a ForwardAuth host: no spelling of a client-sent X-Auth-* header reaches the upstream, nor an upstream's Set-Cookie for a panel cookie the browser", async () => {
    // 2.6.2 forwards header names with underscores, which CGI-style upstreams fold onto X-Auth-*
    // (the production Caddy drops them itself since GHSA-f59h-q822-g45g): the panel deletes them.
    const group = await createGroup(stack, { name: 'compat-fa', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const res = await createHost(stack, { domain: 'fa.example.test', target_group_id: group.id, auth_required: true })
    expect(res.status, res.text).toBe(201)
    up.setResponseHeader('set-cookie', ['panel_session=planted; Domain=example.test; Path=/', 'app=1; Path=/'] as unknown as string)
    try {
      const page = await httpRequest({
        port: stack.httpPort,
        host: 'fa.example.test',
        path: '/',
        headers: {
          cookie: stack.admin,
          X_Auth_User: 'mallory1',
          'X-Auth_Name': 'mallory2',
          'x_auth-provider': 'mallory3',
          X_Auth_Email: 'mallory4',
        },
      })
      expect(page.status).toBe(200)
      const seen = up.requests.at(-1)!.headers
      expect(JSON.stringify(seen)).not.toContain('mallory')
      expect(seen['x-auth-user']).toBe(ADMIN.email)
      const cookies = ([] as string[]).concat(page.headers['set-cookie'] ?? [])
      expect(cookies).toContain('app=1; Path=/')
      expect(cookies.filter((c) => c.includes('panel_session'))).toEqual([])
    } finally {
      up.setResponseHeader('set-cookie', null)
    }
  })
})
