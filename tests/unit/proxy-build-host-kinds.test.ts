import { describe, expect, it } from 'vitest'
import { buildForwardAuthHeaderStripHandler } from '../../server/utils/proxy/build/forward-auth'
import { HOST_HANDLER_ORDER, buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildLanGateRoute } from '../../server/utils/proxy/build/lan-gate'
import { escapePlaceholders, redirectLocation } from '../../server/utils/proxy/build/host-kind'
import { HOST_DEFAULTS, hostBody, resolveHostFields } from '../../server/utils/hosts/schemas'
import { assertHostKindFields } from '../../server/utils/hosts/kinds'
import { buildAccessListSnapshot, buildHostSnapshot, buildRuleSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const NO_PROXIES = { trustedProxies: [], headers: ['X-Forwarded-For'] }
const routesOf = (overrides: Parameters<typeof buildHostSnapshot>[0], snap: Parameters<typeof buildSnapshot>[0] = {}) => {
  const built = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot(overrides)], ...snap }))
  return { routes: hostSubroutes(built.config, 'host1.example.test'), warnings: built.warnings, config: built.config }
}
const terminal = (routes: any[]) => routes.at(-1).handle.at(-1)

describe('host kinds — the end of the chain', () => {
  it('a proxy host (the default) ends with the reverse proxy, as before', () => {
    const { routes } = routesOf({})
    expect(terminal(routes).handler).toBe('reverse_proxy')
    expect(JSON.stringify(routes)).not.toContain('static_response')
  })

  it('a redirect host answers its status and keeps path and query when asked', () => {
    const { routes } = routesOf({
      kind: 'redirect',
      target_group_id: null,
      redirect_to: 'https://new.example.com/base/',
      redirect_status: 308,
    })
    expect(routes).toEqual([
      {
        handle: [
          { handler: 'static_response', status_code: 308, headers: { Location: ['https://new.example.com/base{http.request.uri}'] } },
        ],
      },
    ])
  })

  it('a redirect host drops path and query when not asked; a bare host name keeps the request scheme', () => {
    const host = buildHostSnapshot({ kind: 'redirect', redirect_to: 'https://new.example.com/landing', redirect_keep_path: false })
    expect(redirectLocation(host)).toBe('https://new.example.com/landing')
    expect(redirectLocation({ ...host, redirect_to: 'www.example.com' })).toBe('{http.request.scheme}://www.example.com/')
    expect(redirectLocation({ ...host, redirect_to: 'www.example.com', redirect_keep_path: true })).toBe(
      '{http.request.scheme}://www.example.com{http.request.uri}',
    )
  })

  it('a static host answers its status, content type and body, braces escaped so none is a placeholder', () => {
    const body = '<style>p{color:red}</style>{file./etc/passwd}'
    const { routes } = routesOf({ kind: 'static', static_status: 404, static_content_type: 'text/html; charset=utf-8', static_body: body })
    expect(terminal(routes)).toEqual({
      handler: 'static_response',
      status_code: 404,
      headers: { 'Content-Type': ['text/html; charset=utf-8'] },
      body: '<style>p\\{color:red\\}</style>\\{file./etc/passwd\\}',
    })
    expect(escapePlaceholders('a\\{b}')).toBe('a\\\\{b\\}')
  })

  it('a maintenance host sends its bypass sources to the group and answers the rest 503 with Retry-After', () => {
    const { routes: all } = routesOf({ kind: 'maintenance', maintenance_bypass: ['192.0.2.0/24'], maintenance_retry_after: 600 })
    // First the client's X-Auth-* headers go: the bypass reaches an upstream.
    expect(all[0]).toEqual({ handle: [buildForwardAuthHeaderStripHandler()] })
    const routes = all.slice(1)
    expect(routes).toHaveLength(2)
    expect(routes[0].match).toEqual([{ remote_ip: { ranges: ['192.0.2.0/24'] } }])
    expect(routes[0].terminal).toBe(true)
    expect(routes[0].handle[0].handler).toBe('reverse_proxy')
    expect(routes[1].handle[0]).toMatchObject({ status_code: 503, headers: { 'Retry-After': ['600'] } })
  })

  it('a maintenance host without a bypass needs no group, and its group missing only drops the bypass', () => {
    expect(routesOf({ kind: 'maintenance', target_group_id: null }).routes).toHaveLength(1)
    const { routes, warnings } = routesOf({ kind: 'maintenance', target_group_id: 99, maintenance_bypass: ['192.0.2.1'] })
    // The removal of the client's X-Auth-* headers (a bypass is configured), then the 503.
    expect(routes).toHaveLength(2)
    expect(routes[1].handle[0]).toMatchObject({ status_code: 503 })
    expect(warnings).toContain('host host1.example.test: target group 99 is missing; maintenance bypass not applied')
  })

  it('the gates apply to every kind, in the chain order, before the kind answers', () => {
    expect(HOST_HANDLER_ORDER.at(-1)).toBe('upstream')
    const { routes } = routesOf(
      { kind: 'redirect', redirect_to: 'https://x.example.com', lan_only: true, rate_limit_enabled: true, auth_required: true },
      { modules: ['ratelimit'], accessLists: [buildAccessListSnapshot({ ip_rules: [{ action: 'deny', source: '203.0.113.0/24' }] })] },
    )
    expect(routes[0]).toEqual(buildLanGateRoute(NO_PROXIES))
    const handlers = routes.flatMap((r: any) => r.handle.map((h: any) => h.handler))
    const at = (name: string) => handlers.indexOf(name)
    expect(at('rate_limit')).toBeGreaterThan(-1)
    expect(at('crowdsec')).toBeLessThan(at('rate_limit'))
    expect(at('rate_limit')).toBeLessThan(at('reverse_proxy')) // the ForwardAuth sub-request
    expect(handlers.at(-1)).toBe('static_response')
    expect(routes.at(-1).handle[0].status_code).toBe(302)
  })

  it('path rules are not used by other kinds, with a warning', () => {
    const built = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ kind: 'static' })], rules: [buildRuleSnapshot({ host_id: 1 })] }),
    )
    expect(JSON.stringify(hostSubroutes(built.config, 'host1.example.test'))).not.toContain('X-Panel-Rule-Id')
    expect(built.warnings).toContain('host host1.example.test: a static host does not use its 1 path rule(s)')
  })

  it('a proxy host without its group is still skipped with a warning', () => {
    const built = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ target_group_id: 42 })] }))
    expect(built.warnings).toContain('host host1.example.test: target group 42 is missing; host skipped')
  })
})

describe('host kinds — validation', () => {
  const resolve = (body: Record<string, unknown>) =>
    resolveHostFields(hostBody.parse({ domain: 'a.example.test', tls_mode: 'none', ...body }), HOST_DEFAULTS)
  const refusal = (body: Record<string, unknown>) => {
    try {
      assertHostKindFields(resolve(body))
    } catch (err) {
      return (err as Error).message
    }
    return null
  }
  const parseIssue = (body: Record<string, unknown>) => {
    const r = hostBody.safeParse({ domain: 'a.example.test', tls_mode: 'none', ...body })
    return r.success ? null : `${r.error.issues[0]!.path.join('.')}: ${r.error.issues[0]!.message}`
  }

  it('a host without a kind is a proxy host and needs a target group, named in the message', () => {
    expect(resolve({ target_group_id: 1 }).kind).toBe('proxy')
    expect(refusal({})).toMatch(/^target_group_id: a proxy host needs a target group/)
    expect(refusal({ kind: 'static' })).toBeNull()
  })

  it('a redirect needs a target that is an http(s) URL or a host name, with no placeholder, control character or loop', () => {
    expect(refusal({ kind: 'redirect' })).toMatch(/^redirect_to: a redirect host needs a target/)
    expect(refusal({ kind: 'redirect', redirect_to: 'https://a.example.test/x' })).toMatch(/^redirect_to: points at this host's own name/)
    expect(refusal({ kind: 'redirect', redirect_to: 'https://b.example.test/?q=1' })).toMatch(/^redirect_to: must not have a query/)
    expect(refusal({ kind: 'redirect', redirect_to: 'https://b.example.test/?q=1', redirect_keep_path: false })).toBeNull()
    for (const bad of ['https://b.example.test/{http.request.host}', 'ftp://b.example.test', 'b.example.test/\u0007', 'not a host'])
      expect(parseIssue({ kind: 'redirect', redirect_to: bad })).toMatch(/^redirect_to: must be an http\(s\) URL/)
    expect(parseIssue({ redirect_status: 300 })).toBe('redirect_status: must be 301, 302, 303, 307 or 308')
  })

  it('pages are bounded, typed, and free of control characters; bypass entries are addresses or ranges', () => {
    expect(parseIssue({ static_body: 'x'.repeat(65_537) })).toMatch(/^static_body: must be at most/)
    expect(parseIssue({ static_body: 'é'.repeat(40_000) })).toBe('static_body: must be at most 64 KiB')
    expect(parseIssue({ maintenance_body: 'a\u0000b' })).toMatch(/^maintenance_body: must not contain control characters/)
    expect(parseIssue({ static_content_type: 'text/html\r\nX: y' })).toMatch(/^static_content_type: must be a media type/)
    expect(parseIssue({ maintenance_bypass: ['10.0.0.0/33'] })).toMatch(/^maintenance_bypass.0: must be an IP address or a CIDR/)
    expect(refusal({ kind: 'maintenance', maintenance_bypass: ['10.0.0.0/8'] })).toMatch(/^target_group_id: the bypass addresses/)
  })
})
