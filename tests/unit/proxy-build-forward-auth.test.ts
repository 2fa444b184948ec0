import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { FORWARD_AUTH_CALLBACK_PATH, PANEL_COOKIE_NAMES } from '../../server/utils/auth/session-cookie'
import {
  buildForwardAuthCallbackRoute,
  buildForwardAuthHeaderStripHandler,
  buildPanelCookieStripHandler,
  FORWARD_AUTH_HEADERS,
  forwardAuthHeaderSpellings,
  FORWARD_AUTH_PROBE_HOST,
  buildForwardAuthHandler,
  buildForwardAuthProbeRoute,
  forwardAuthVarName,
} from '../../server/utils/proxy/build/forward-auth'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const panel = { dial: '127.0.0.1:3000', tls: false }

describe('buildForwardAuthHandler — sub-request to the panel', () => {
  it('asks the panel /auth/forward with GET and passes method and URI', () => {
    const h = buildForwardAuthHandler(panel) as any
    expect(h.handler).toBe('reverse_proxy')
    expect(h.upstreams).toEqual([{ dial: '127.0.0.1:3000' }])
    expect(h.rewrite).toEqual({ method: 'GET', uri: '/auth/forward' })
    expect(h.headers).toEqual({
      request: { set: { 'X-Forwarded-Method': ['{http.request.method}'], 'X-Forwarded-Uri': ['{http.request.uri}'] } },
    })
    expect(h.transport).toBeUndefined()
  })

  it('uses TLS to a panel behind https', () => {
    expect((buildForwardAuthHandler({ dial: 'panel:443', tls: true }) as any).transport).toEqual({ protocol: 'http', tls: {} })
  })

  it('only 2xx answers run the header routes; anything else (the 302 to login) goes back to the client', () => {
    const h = buildForwardAuthHandler(panel) as any
    expect(h.handle_response).toHaveLength(1)
    expect(h.handle_response[0].match).toEqual({ status_code: [2] })
  })
})

describe('buildForwardAuthHandler — X-Auth-* headers on 2xx', () => {
  const routes = (buildForwardAuthHandler(panel) as any).handle_response[0].routes

  it('copies every answer header into a variable first ("" when the answer lacks it)', () => {
    expect(routes[0]).toEqual({
      handle: [
        {
          handler: 'vars',
          panel_auth_x_auth_email: '{http.reverse_proxy.header.X-Auth-Email}',
          panel_auth_x_auth_groups: '{http.reverse_proxy.header.X-Auth-Groups}',
          panel_auth_x_auth_name: '{http.reverse_proxy.header.X-Auth-Name}',
          panel_auth_x_auth_provider: '{http.reverse_proxy.header.X-Auth-Provider}',
          panel_auth_x_auth_user: '{http.reverse_proxy.header.X-Auth-User}',
          // Caddy's access log writes it as user_id (logs.actor at ingestion).
          'http.auth.user.id': '{http.reverse_proxy.header.X-Auth-User}',
        },
      ],
    })
  })

  it('deletes each client-sent header unconditionally, then sets it only when the answer has it', () => {
    expect([...FORWARD_AUTH_HEADERS]).toEqual(['X-Auth-Email', 'X-Auth-Groups', 'X-Auth-Name', 'X-Auth-Provider', 'X-Auth-User'])
    expect(routes).toHaveLength(1 + 2 * FORWARD_AUTH_HEADERS.length)
    FORWARD_AUTH_HEADERS.forEach((name, i) => {
      const del = routes[1 + 2 * i]
      const set = routes[2 + 2 * i]
      expect(del).toEqual({ handle: [{ handler: 'headers', request: { delete: forwardAuthHeaderSpellings(name) } }] }) // no match: always runs
      expect(set.match).toEqual([{ not: [{ vars: { [forwardAuthVarName(name)]: [''] } }] }])
      expect(set.handle).toEqual([{ handler: 'headers', request: { set: { [name]: [`{http.reverse_proxy.header.${name}}`] } } }])
    })
  })

  it('deletes every spelling an upstream may fold onto the header: underscores for hyphens, in any mix (CGI reads X_Auth_User as X-Auth-User)', () => {
    expect(forwardAuthHeaderSpellings('X-Auth-User')).toEqual(['X-Auth-User', 'X-Auth_User', 'X_Auth-User', 'X_Auth_User'])
    for (const name of FORWARD_AUTH_HEADERS) {
      const deleted = routes.flatMap((r: any) => r.handle.flatMap((h: any) => h.request?.delete ?? []))
      for (const spelling of forwardAuthHeaderSpellings(name)) expect(deleted).toContain(spelling)
    }
  })

  it('never keys the guard by the placeholder itself (Caddy 2.6.2 compares an unset placeholder as "<nil>")', () => {
    for (const r of routes)
      for (const m of r.match ?? []) for (const n of m.not) for (const key of Object.keys(n.vars)) expect(key).not.toContain('{')
  })
})

describe('buildForwardAuthHandler — in the host chain', () => {
  it('is emitted for auth_required hosts only', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ auth_required: true }), buildHostSnapshot({ id: 2 })] }),
    )
    expect(hostSubroutes(config, 'host1.example.test')[0].handle).toEqual([
      buildForwardAuthHandler(panel),
      buildPanelCookieStripHandler(PANEL_COOKIE_NAMES),
    ])
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).not.toContain('/auth/forward')
  })

  it("then takes the panel's session cookie out of the request, keeping the others", () => {
    const strip = buildPanelCookieStripHandler('panel_session') as any
    expect(strip.handler).toBe('headers')
    // The same replacements, in order, as Caddy applies them (Go's RE2 and JS agree on these patterns).
    const apply = (cookie: string) =>
      strip.request.replace.Cookie.reduce((v: string, r: any) => v.replace(new RegExp(r.search_regexp), r.replace), cookie)
    expect(apply('a=1; panel_session=tok; b=2')).toBe('a=1; b=2')
    expect(apply('panel_session=tok; b=2')).toBe('b=2')
    expect(apply('a=1; panel_session=tok')).toBe('a=1')
    expect(apply('my_panel_session=1; b=2')).toBe('my_panel_session=1; b=2')
  })

  it('takes the cookie out on hosts without ForwardAuth under its domain, but not on the panel itself nor outside the domain', () => {
    const scope = { domain: 'example.test', panelHost: 'panel.example.test' }
    const { config } = buildProxyConfig(
      buildSnapshot({
        panelCookie: scope,
        hosts: [
          buildHostSnapshot({ id: 1, domain: 'app.example.test' }),
          buildHostSnapshot({ id: 2, domain: 'panel.example.test' }),
          buildHostSnapshot({ id: 3, domain: 'other.org', aliases: ['www.other.org'] }),
          buildHostSnapshot({ id: 4, domain: 'other.net', aliases: ['alias.example.test'] }),
          buildHostSnapshot({ id: 5, domain: 'fa.example.test', auth_required: true }),
        ],
      }),
    )
    const strip = buildPanelCookieStripHandler(PANEL_COOKIE_NAMES)
    const headers = buildForwardAuthHeaderStripHandler()
    expect(hostSubroutes(config, 'app.example.test')[0].handle).toEqual([headers, strip])
    expect(JSON.stringify(hostSubroutes(config, 'panel.example.test'))).not.toContain('panel_session')
    expect(JSON.stringify(hostSubroutes(config, 'other.org'))).not.toContain('panel_session')
    expect(hostSubroutes(config, 'other.net')[0].handle).toEqual([headers, strip])
    // ForwardAuth hosts keep the check first: the panel reads the cookie there, then it goes.
    expect(hostSubroutes(config, 'fa.example.test')[0].handle).toEqual([buildForwardAuthHandler(panel), strip])
    // A host-only cookie (no parent domain): nothing to take out anywhere.
    const hostOnly = buildProxyConfig(buildSnapshot({ panelCookie: null, hosts: [buildHostSnapshot({ domain: 'app.example.test' })] }))
    expect(JSON.stringify(hostOnly.config)).not.toContain('search_regexp')
  })

  it("takes every panel cookie out of the request: the session under both names, and strict mode's ForwardAuth credential", () => {
    expect([...PANEL_COOKIE_NAMES]).toEqual(['panel_session', '__Host-panel_session', 'panel_fa'])
    const strip = buildPanelCookieStripHandler(PANEL_COOKIE_NAMES) as any
    const apply = (cookie: string) =>
      strip.request.replace.Cookie.reduce((v: string, r: any) => v.replace(new RegExp(r.search_regexp), r.replace), cookie)
    expect(apply('a=1; panel_fa=t1; b=2')).toBe('a=1; b=2')
    expect(apply('__Host-panel_session=t2; b=2')).toBe('b=2')
    expect(apply('a=1; panel_session=t3')).toBe('a=1')
    expect(apply('my_panel_fa=1; b=2')).toBe('my_panel_fa=1; b=2')
  })

  it("empties an upstream's Set-Cookie for a panel cookie name, deferred to the upstream's answer; the upstream's own cookies pass", () => {
    const strip = buildPanelCookieStripHandler(PANEL_COOKIE_NAMES) as any
    expect(strip.response.deferred).toBe(true)
    // Go's (?i) prefix is JS's i flag.
    const apply = (value: string) =>
      strip.response.replace['Set-Cookie'].reduce(
        (v: string, r: any) => v.replace(new RegExp(r.search_regexp.replace(/^\(\?i\)/, ''), 'i'), r.replace),
        value,
      )
    for (const planted of [
      'panel_session=attacker; Domain=example.test; Path=/',
      ' PANEL_SESSION = x; Max-Age=0',
      '__host-panel_session=x; Secure; Path=/',
      'panel_fa=x; Path=/',
    ])
      expect(apply(planted), planted).toBe('')
    for (const own of ['app_session=1; Path=/', 'my_panel_session=1', 'theme=dark; Comment=panel_session=x'])
      expect(apply(own), own).toBe(own)
  })

  it('strict session mode: every ForwardAuth host hands the reserved callback path to the panel, before the check', () => {
    const route = buildForwardAuthCallbackRoute(panel) as any
    expect(route).toEqual({
      match: [{ path: [FORWARD_AUTH_CALLBACK_PATH] }],
      handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: '127.0.0.1:3000' }], rewrite: { uri: '/auth/forward/callback' } }],
      terminal: true,
    })
    expect(FORWARD_AUTH_CALLBACK_PATH).toBe('/.panel-auth/callback')
    const hosts = [
      buildHostSnapshot({ id: 1, domain: 'fa.other.test', auth_required: true, waf_enabled: true }),
      buildHostSnapshot({ id: 2, domain: 'open.other.test' }),
    ]
    const strict = buildProxyConfig(buildSnapshot({ strictSessions: true, modules: ['waf'], hosts })).config
    const routes = hostSubroutes(strict, 'fa.other.test')
    const at = routes.findIndex((r: any) => r.match?.[0]?.path?.[0] === FORWARD_AUTH_CALLBACK_PATH)
    const check = routes.findIndex((r: any) => r.handle?.some((h: any) => h.rewrite?.uri === '/auth/forward'))
    // After the gates (the WAF still judges the callback), before the check and its Set-Cookie scrub.
    expect(routes.findIndex((r: any) => r.handle?.some((h: any) => h.handler === 'waf'))).toBeLessThan(at)
    expect(at).toBeGreaterThanOrEqual(0)
    expect(at).toBeLessThan(check)
    expect(routes[at]).toEqual(route)
    expect(JSON.stringify(hostSubroutes(strict, 'open.other.test'))).not.toContain(FORWARD_AUTH_CALLBACK_PATH)
    // The default mode has no such path.
    const plain = buildProxyConfig(buildSnapshot({ modules: ['waf'], hosts })).config
    expect(JSON.stringify(plain)).not.toContain(FORWARD_AUTH_CALLBACK_PATH)
  })

  it('dials the snapshot panel upstream', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ panelUpstream: { dial: 'panel.internal:8443', tls: true }, hosts: [buildHostSnapshot({ auth_required: true })] }),
    )
    const h = hostSubroutes(config, 'host1.example.test')[0].handle[0]
    expect(h.upstreams).toEqual([{ dial: 'panel.internal:8443' }])
    expect(h.transport).toEqual({ protocol: 'http', tls: {} })
  })
})

describe('buildForwardAuthProbeRoute — the reachability probe of the plain server', () => {
  it("runs the hosts' own sub-request, to the same address, for the probe's reserved name only, then answers 204", () => {
    const route = buildForwardAuthProbeRoute(panel) as any
    expect(route.match).toEqual([{ host: [FORWARD_AUTH_PROBE_HOST] }])
    expect(FORWARD_AUTH_PROBE_HOST).toMatch(/\.invalid$/) // RFC 2606: no visitor's name
    expect(route.handle).toEqual([buildForwardAuthHandler(panel), { handler: 'static_response', status_code: 204 }])
    expect(route.terminal).toBe(true)
  })

  it('is on the plain server of every configuration, with or without a ForwardAuth host, before the unknown-host refusal', () => {
    for (const hosts of [[], [buildHostSnapshot({ auth_required: false })], [buildHostSnapshot({ auth_required: true })]]) {
      const snapshot = buildSnapshot({ hosts })
      const routes = (buildProxyConfig(snapshot).config as any).apps.http.servers.http.routes
      expect(routes.at(-2)).toEqual(buildForwardAuthProbeRoute(snapshot.panelUpstream))
    }
  })
})
