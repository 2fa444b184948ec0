import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { ADMIN, registerTestSecret } from '../support/panel'

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const res = await createHost(stack, { domain: 'secure.example.test', target_group_id: group.id, auth_required: true })
  expect(res.status).toBe(201)
  // Without ForwardAuth: one under the cookie's domain (example.test, the parent of PANEL_DOMAIN), one outside it.
  for (const domain of ['open.example.test', 'open.other.test'])
    expect((await createHost(stack, { domain, target_group_id: group.id })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe('auth_required: the proxy asks the panel before the upstream', () => {
  it('without a session the browser is sent to the panel login with rd = the original URL, and the upstream sees nothing', async () => {
    const before = up.requests.length
    const res = await httpRequest({ port: stack.httpPort, host: 'secure.example.test', path: '/private/page?x=1' })
    expect(res.status).toBe(302)
    const location = new URL(String(res.headers.location))
    expect(`${location.origin}${location.pathname}`).toBe('https://panel.example.test/login')
    expect(location.searchParams.get('rd')).toBe('http://secure.example.test/private/page?x=1')
    // The proxy hands the panel's redirect on as it is, with the headers meant for the browser.
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(up.requests.length).toBe(before)
  })

  it('with a session cookie the upstream receives the four X-Auth-* headers, never the client-sent ones', async () => {
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'secure.example.test',
      path: '/private',
      headers: { cookie: stack.admin, 'x-auth-user': 'mallory', 'x-auth-email': 'mallory@evil.test' },
    })
    expect(res.status).toBe(200)
    const seen = up.requests.at(-1)!.headers
    expect(seen['x-auth-user']).toBe(ADMIN.email)
    expect(seen['x-auth-email']).toBe(ADMIN.email)
    expect(seen['x-auth-name']).toBeTruthy()
    expect(seen['x-auth-provider']).toBe('local')
    expect(JSON.stringify(seen)).not.toContain('mallory')
  })

  it("the upstream never receives the panel's session cookie; the application's own cookies pass", async () => {
    const token = stack.admin.split('=')[1]!
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'secure.example.test',
      path: '/private',
      headers: { cookie: `app_a=1; ${stack.admin}; app_b=2` },
    })
    expect(res.status).toBe(200)
    const seen = up.requests.at(-1)!.headers
    expect(seen.cookie).toBe('app_a=1; app_b=2')
    expect(seen['x-auth-email']).toBe(ADMIN.email)
    expect(JSON.stringify(seen)).not.toContain(token)
    // The session cookie first, then alone.
    await httpRequest({ port: stack.httpPort, host: 'secure.example.test', path: '/', headers: { cookie: `${stack.admin}; app_b=2` } })
    expect(up.requests.at(-1)!.headers.cookie).toBe('app_b=2')
    await httpRequest({ port: stack.httpPort, host: 'secure.example.test', path: '/', headers: { cookie: stack.admin } })
    expect(up.requests.at(-1)!.headers.cookie ?? '').toBe('')
  })

  it('a host without ForwardAuth under the same domain does not pass the session cookie on either; a host outside the domain is left alone', async () => {
    const token = stack.admin.split('=')[1]!
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'open.example.test',
      path: '/',
      headers: { cookie: `app_a=1; ${stack.admin}; app_b=2` },
    })
    expect(res.status).toBe(200)
    const seen = up.requests.at(-1)!.headers
    expect(seen.cookie).toBe('app_a=1; app_b=2')
    expect(JSON.stringify(seen)).not.toContain(token)
    expect(seen['x-auth-email']).toBeUndefined()
    // A browser never sends the cookie there; what a client sends by hand passes as it is.
    await httpRequest({ port: stack.httpPort, host: 'open.other.test', path: '/', headers: { cookie: 'panel_session=not-ours; b=2' } })
    expect(up.requests.at(-1)!.headers.cookie).toBe('panel_session=not-ours; b=2')
  })

  it("answers the proxy's sub-request itself; the browser's security headers go on the redirect the browser sees, not on the 200 the proxy keeps", async () => {
    const api = await stack.panel.request('/api/setup')
    const securityHeaders = [
      'x-content-type-options',
      'referrer-policy',
      'strict-transport-security',
      'content-security-policy',
      'x-frame-options',
    ]
    expect(api.headers.get('x-content-type-options')).toBe('nosniff')
    expect(api.headers.get('content-security-policy')).toBe("frame-ancestors 'none'")
    expect(api.headers.get('x-frame-options')).toBe('DENY')
    // The fast path serves the proxy's exact request; a query string takes the app's route.
    for (const path of ['/auth/forward', '/auth/forward?via=app']) {
      const ok = await stack.panel.request(path, { cookie: stack.admin })
      expect(ok.status, path).toBe(200)
      expect(ok.text).toBe('')
      expect(
        Object.fromEntries(
          ['x-auth-email', 'x-auth-user', 'cache-control', 'content-length', 'content-type', ...securityHeaders].map((h) => [
            h,
            ok.headers.get(h),
          ]),
        ),
        path,
      ).toEqual({
        'x-auth-email': ADMIN.email,
        'x-auth-user': ADMIN.email,
        'cache-control': 'no-store',
        'content-length': '0',
        'content-type': null,
        'x-content-type-options': null,
        'referrer-policy': null,
        'strict-transport-security': null,
        'content-security-policy': null,
        'x-frame-options': null,
      })
      const away = await stack.panel.request(path, { headers: { 'x-forwarded-host': 'secure.example.test', 'x-forwarded-uri': '/' } })
      expect(away.status, path).toBe(302)
      for (const name of securityHeaders) expect(away.headers.get(name), `${path} ${name}`).toBe(api.headers.get(name))
      expect(away.headers.get('content-type'), path).toBe('text/html')
      expect(away.headers.get('content-length'), path).toBe(String(Buffer.byteLength(away.text)))
    }
    const login = await stack.panel.request('/auth/forward', {
      headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'secure.example.test', 'x-forwarded-uri': '/private?x=1' },
    })
    expect(login.status).toBe(302)
    const location = login.headers.get('location')!
    expect(location).toBe(`https://panel.example.test/login?rd=${encodeURIComponent('https://secure.example.test/private?x=1')}`)
    expect(login.text).toBe(`<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url=${location}"></head></html>`)
    // Another method is not the proxy's: the route table answers it, as for any path.
    expect((await stack.panel.request('/auth/forward', { method: 'POST', cookie: stack.admin })).status).toBe(405)
  })

  it('a forged cookie is treated as no session', async () => {
    const before = up.requests.length
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'secure.example.test',
      path: '/',
      headers: { cookie: 'panel_session=forged', 'x-auth-user': 'mallory' },
    })
    expect(res.status).toBe(302)
    expect(up.requests.length).toBe(before)
  })
})

describe('ForwardAuth for every name (issue 33, item 9)', () => {
  const LUKASZ = { email: 'łukasz.żółć@example.test', password: 'lukasz-password-long-1', name: 'Łukasz Żółć' }

  it("a user named outside ASCII reaches a protected host; the upstream gets UTF-8'' + the percent-encoded bytes, which decode to the exact name", async () => {
    registerTestSecret(LUKASZ.password)
    const created = await stack.panel.request('/api/users', { method: 'POST', cookie: stack.admin, body: { ...LUKASZ, role: 'viewer' } })
    expect(created.status, created.text).toBe(201)
    const cookie = await stack.panel.login(LUKASZ.email, LUKASZ.password)
    const res = await httpRequest({ port: stack.httpPort, host: 'secure.example.test', path: '/for-lukasz', headers: { cookie } })
    expect(res.status, res.body).toBe(200)
    const seen = up.requests.at(-1)!
    expect(seen.url).toBe('/for-lukasz')
    // The documented form (docs/auth.md): RFC 8187's ext-value, charset UTF-8, no language.
    expect(seen.headers['x-auth-name']).toBe("UTF-8''%C5%81ukasz%20%C5%BB%C3%B3%C5%82%C4%87")
    const decode = (v: unknown) => {
      expect(String(v).startsWith("UTF-8''")).toBe(true)
      return decodeURIComponent(String(v).slice("UTF-8''".length))
    }
    expect(decode(seen.headers['x-auth-name'])).toBe(LUKASZ.name)
    expect(decode(seen.headers['x-auth-email'])).toBe(LUKASZ.email)
    expect(decode(seen.headers['x-auth-user'])).toBe(LUKASZ.email)
    // ASCII values stay as they are.
    expect(seen.headers['x-auth-provider']).toBe('local')
    // The app's route answers alike (the fast path served the proxy).
    const viaApp = await stack.panel.request('/auth/forward?via=app', { cookie })
    expect(viaApp.status).toBe(200)
    expect(viaApp.headers.get('x-auth-name')).toBe(seen.headers['x-auth-name'])
  })

  it('an ASCII name that looks encoded is encoded itself, so that no plain value passes for another', async () => {
    const MIMIC = { email: 'mimic@example.test', password: 'mimic-password-long-1', name: "UTF-8''%C5%81ukasz" }
    registerTestSecret(MIMIC.password)
    const created = await stack.panel.request('/api/users', { method: 'POST', cookie: stack.admin, body: { ...MIMIC, role: 'viewer' } })
    expect(created.status, created.text).toBe(201)
    const cookie = await stack.panel.login(MIMIC.email, MIMIC.password)
    expect((await httpRequest({ port: stack.httpPort, host: 'secure.example.test', path: '/', headers: { cookie } })).status).toBe(200)
    const name = String(up.requests.at(-1)!.headers['x-auth-name'])
    expect(decodeURIComponent(name.slice("UTF-8''".length))).toBe(MIMIC.name)
    expect(up.requests.at(-1)!.headers['x-auth-email']).toBe(MIMIC.email)
  })
})

describe('client addresses behind the proxy (issue 33, item 6)', () => {
  it('reached through the proxy with PANEL_TRUSTED_PROXIES empty, the health answers name the proxy and say what to set', async () => {
    const before = await stack.panel.request('/api/system/health', { cookie: stack.admin })
    expect(before.json.client_addresses).toEqual({ trusted_proxies: [], forwarded_by: null, warning: null })
    const panelGroup = await createGroup(stack, { name: 'panel', targets: [{ address: `127.0.0.1:${stack.panel.port}` }] })
    expect((await createHost(stack, { domain: 'panel.example.test', target_group_id: panelGroup.id })).status).toBe(201)
    const through = await httpRequest({
      port: stack.httpPort,
      host: 'panel.example.test',
      path: '/api/auth/session',
      headers: { cookie: stack.admin },
    })
    expect(through.status, through.body).toBe(200)
    for (const path of ['/api/system/health', '/api/dashboard/health']) {
      const res = await stack.panel.request(path, { cookie: stack.admin })
      expect(res.status, path).toBe(200)
      expect(res.json.client_addresses.forwarded_by?.peer, path).toBe('127.0.0.1')
      expect(res.json.client_addresses.warning, path).toMatch(/PANEL_TRUSTED_PROXIES is empty.*Set PANEL_TRUSTED_PROXIES=127\.0\.0\.1/)
    }
  })
})

describe('the proxy scrubs both ways, in the default mode too (issue 33)', () => {
  it("an upstream's Set-Cookie for a panel cookie never reaches the browser, on a protected host or a sibling; its own cookies do", async () => {
    const planted = [
      'panel_session=attacker-session; Domain=example.test; Path=/',
      '__Host-panel_session=attacker; Path=/; Secure',
      'panel_fa=attacker; Path=/',
      'app=1; Path=/',
    ]
    up.setResponseHeader('set-cookie', planted as unknown as string)
    try {
      for (const [host, cookie] of [
        ['secure.example.test', stack.admin],
        ['open.example.test', undefined],
      ] as const) {
        const res = await httpRequest({ port: stack.httpPort, host, path: '/', headers: cookie ? { cookie } : {} })
        expect(res.status, host).toBe(200)
        const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? [])
        expect(cookies, host).toContain('app=1; Path=/')
        expect(
          cookies.filter((c) => /panel/i.test(c)),
          host,
        ).toEqual([])
      }
    } finally {
      up.setResponseHeader('set-cookie', null)
    }
  })

  // The production Caddy drops every header name with an underscore itself (GHSA-f59h-q822-g45g); the
  // panel's own deletes are what protects the stock 2.6.2 (proxy.compat-stock.test.ts fails without them).
  it('a client-sent X-Auth-* header reaches the upstream in no spelling: underscores, mixed, any case', async () => {
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'secure.example.test',
      path: '/',
      headers: {
        cookie: stack.admin,
        X_Auth_User: 'mallory1',
        x_auth_email: 'mallory2@evil.test',
        'X-Auth_Name': 'mallory3',
        'x_auth-provider': 'mallory4',
        'X-AUTH-USER': 'mallory5',
      },
    })
    expect(res.status).toBe(200)
    const seen = up.requests.at(-1)!.headers
    expect(JSON.stringify(seen)).not.toContain('mallory')
    expect(
      Object.keys(seen)
        .filter((k) => /^x[-_]auth[-_]/i.test(k))
        .sort(),
    ).toEqual(['x-auth-email', 'x-auth-name', 'x-auth-provider', 'x-auth-user'])
    expect(seen['x-auth-user']).toBe(ADMIN.email)
  })

  it("the default mode has no code exchange: the panel refuses its paths, and a protected host's reserved path is the upstream's", async () => {
    const start = await stack.panel.request(`/auth/forward/start?rd=${encodeURIComponent('http://secure.example.test/')}`, {
      cookie: stack.admin,
    })
    expect(start.status).toBe(404)
    expect(start.json.error).toContain('auth.strict_sessions')
    const res = await httpRequest({
      port: stack.httpPort,
      host: 'secure.example.test',
      path: '/.panel-auth/callback?code=x',
      headers: { cookie: stack.admin },
    })
    expect(res.status).toBe(200)
    expect(up.requests.at(-1)!.url).toBe('/.panel-auth/callback?code=x')
  })
})
