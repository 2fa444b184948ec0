import { describe, expect, it } from 'vitest'
import { hostBody } from '../../server/utils/hosts/schemas'
import { SECURITY_HEADERS, buildRequestHeadersHandler, buildResponseHeadersHandler } from '../../server/utils/proxy/build/headers'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { describeZodError } from '../../server/utils/core/validate'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const rule = (direction: 'request' | 'response', action: 'set' | 'add' | 'remove', name: string, value: string | null = null) => ({
  direction,
  action,
  name,
  value,
})

describe('buildResponseHeadersHandler', () => {
  it('is absent for a host without presets or rules', () => {
    expect(buildResponseHeadersHandler(buildHostSnapshot())).toBeNull()
    expect(buildRequestHeadersHandler(buildHostSnapshot())).toBeNull()
  })

  it('sets, adds and removes response headers, deferred so they apply to whatever answers', () => {
    const host = buildHostSnapshot({
      header_rules: [
        rule('response', 'set', 'X-Served-By', 'edge'),
        rule('response', 'add', 'Link', '</a.css>; rel=preload'),
        rule('response', 'add', 'Link', '</b.js>; rel=preload'),
        rule('response', 'remove', 'X-Powered-By'),
        rule('request', 'set', 'X-Ignored-Here', 'x'),
      ],
    })
    expect(buildResponseHeadersHandler(host)).toEqual({
      handler: 'headers',
      response: {
        set: { 'X-Served-By': ['edge'] },
        add: { Link: ['</a.css>; rel=preload', '</b.js>; rel=preload'] },
        delete: ['X-Powered-By'],
        deferred: true,
      },
    })
  })

  it('HSTS with its flags, only on a host served over HTTPS', () => {
    const hsts = { max_age: 31_536_000, include_subdomains: true, preload: true }
    expect((buildResponseHeadersHandler(buildHostSnapshot({ tls_mode: 'auto', hsts })) as any).response.set).toEqual({
      'Strict-Transport-Security': ['max-age=31536000; includeSubDomains; preload'],
    })
    expect(
      (
        buildResponseHeadersHandler(
          buildHostSnapshot({ tls_mode: 'manual', hsts: { max_age: 300, include_subdomains: false, preload: false } }),
        ) as any
      ).response.set,
    ).toEqual({ 'Strict-Transport-Security': ['max-age=300'] })
    expect(buildResponseHeadersHandler(buildHostSnapshot({ tls_mode: 'none', hsts }))).toBeNull()
    const { warnings } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ tls_mode: 'none', hsts })] }))
    expect(warnings).toContain('host host1.example.test: HSTS is not sent, the host is served over plain HTTP only')
  })

  it('the security headers preset and a CSP in either mode; a rule naming a preset header wins', () => {
    const enforce = buildResponseHeadersHandler(
      buildHostSnapshot({
        security_headers: true,
        csp: { mode: 'enforce', policy: "default-src 'self'" },
        header_rules: [rule('response', 'set', 'x-frame-options', 'DENY')],
      }),
    ) as any
    expect(enforce.response.set).toEqual({
      'X-Content-Type-Options': ['nosniff'],
      'X-Frame-Options': ['DENY'],
      'Referrer-Policy': [SECURITY_HEADERS['Referrer-Policy']],
      'Permissions-Policy': [SECURITY_HEADERS['Permissions-Policy']],
      'Content-Security-Policy': ["default-src 'self'"],
    })
    const reportOnly = buildResponseHeadersHandler(buildHostSnapshot({ csp: { mode: 'report-only', policy: "default-src 'self'" } })) as any
    expect(reportOnly.response.set).toEqual({ 'Content-Security-Policy-Report-Only': ["default-src 'self'"] })
  })
})

describe('buildRequestHeadersHandler', () => {
  it('sets, adds and removes request headers and overrides the Host the upstream gets', () => {
    const host = buildHostSnapshot({
      upstream_host: 'app.internal:8080',
      header_rules: [
        rule('request', 'set', 'X-Tenant', 'blue'),
        rule('request', 'add', 'X-Tag', 'a'),
        rule('request', 'remove', 'X-Debug'),
      ],
    })
    expect(buildRequestHeadersHandler(host)).toEqual({
      handler: 'headers',
      request: { set: { Host: ['app.internal:8080'], 'X-Tenant': ['blue'] }, add: { 'X-Tag': ['a'] }, delete: ['X-Debug'] },
    })
  })
})

describe('header handlers in the host chain', () => {
  it('response headers right after compression and before the bouncer; request headers after ForwardAuth, before the upstream', () => {
    const host = buildHostSnapshot({
      auth_required: true,
      compression: 'on',
      header_rules: [rule('request', 'set', 'X-Tenant', 'blue'), rule('response', 'set', 'X-Served-By', 'edge')],
    })
    const routes = hostSubroutes(buildProxyConfig(buildSnapshot({ hosts: [host] })).config, 'host1.example.test')
    expect(routes[0].handle[0].handler).toBe('encode')
    expect(routes[1]).toEqual({ handle: [buildResponseHeadersHandler(host)] })
    const chain = routes[2].handle.map((h: any) => h.handler)
    expect(chain.indexOf('headers')).toBeGreaterThan(chain.indexOf('reverse_proxy'))
    expect(chain.at(-1)).toBe('headers')
    expect(routes[2].handle.at(-1)).toEqual(buildRequestHeadersHandler(host))
  })

  it('a host from before header rules (its fields empty after the migration) pushes the same bytes as one without them', () => {
    const host = buildHostSnapshot({ auth_required: true, waf_enabled: true, tls_mode: 'auto' })
    const { header_rules: _r, upstream_host: _u, hsts: _h, security_headers: _s, csp: _c, ...older } = host
    const before = buildSnapshot({ hosts: [older as typeof host] })
    const after = buildSnapshot({
      hosts: [{ ...host, header_rules: [], upstream_host: null, hsts: null, security_headers: false, csp: null }],
    })
    expect(stableStringify(buildProxyConfig(after).config)).toBe(stableStringify(buildProxyConfig(before).config))
    expect(stableStringify(buildProxyConfig(after).config)).not.toContain('"deferred":true,"set"')
  })
})

describe('header rules validation (hostBody)', () => {
  const base = { domain: 'a.example.test', target_group_id: 1, tls_mode: 'auto' }
  const problem = (extra: Record<string, unknown>) => {
    const r = hostBody.safeParse({ ...base, ...extra })
    return r.success ? null : describeZodError(r.error)
  }

  it('accepts valid rules and presets', () => {
    expect(
      problem({
        header_rules: [rule('request', 'set', 'X-Tenant', 'blue'), rule('response', 'remove', 'Server')],
        upstream_host: 'app.internal:8080',
        hsts: { max_age: 63_072_000, include_subdomains: true, preload: true },
        security_headers: true,
        csp: { mode: 'report-only', policy: "default-src 'self'; img-src *" },
      }),
    ).toBeNull()
  })

  it.each([
    [{ header_rules: [rule('request', 'set', 'Bad Name', 'x')] }, /header_rules\.0\.name: must be a header name/],
    [{ header_rules: [rule('request', 'set', 'X-A', '{http.request.host}')] }, /header_rules\.0\.value: must not contain \{ or \}/],
    [{ header_rules: [rule('response', 'set', 'X-A', 'a\nb')] }, /header_rules\.0\.value: must not contain control characters/],
    [
      { header_rules: [rule('request', 'set', 'Connection', 'close')] },
      /header_rules\.0\.name: is refused: Connection is a hop-by-hop header/,
    ],
    [
      { header_rules: [rule('request', 'set', 'X-Auth-User', 'admin')] },
      /header_rules\.0\.name: is refused: X-Auth-User: the X-Auth-\* headers/,
    ],
    [{ header_rules: [rule('request', 'remove', 'x-auth-email')] }, /is refused: x-auth-email/],
    [{ header_rules: [rule('request', 'set', 'Host', 'other')] }, /is refused: Host: use upstream_host/],
    [{ header_rules: [rule('request', 'set', 'X-Forwarded-For', '1.2.3.4')] }, /is refused: X-Forwarded-For is set by the proxy/],
    [{ header_rules: [rule('response', 'set', 'Strict-Transport-Security', 'max-age=1')] }, /use the HSTS or CSP switch/],
    [{ header_rules: [rule('request', 'set', 'X-A')] }, /header_rules\.0\.value: is required when the action is "set"/],
    [{ header_rules: [rule('request', 'remove', 'X-A', 'x')] }, /must be null when the action is "remove"/],
    [{ upstream_host: 'bad host' }, /upstream_host: must be a host name/],
    [{ hsts: { max_age: 300, include_subdomains: true, preload: true } }, /hsts\.max_age: must be at least 31536000/],
    [{ hsts: { max_age: 31_536_000, preload: true } }, /hsts\.include_subdomains: must be true with preload/],
    [{ csp: { mode: 'block', policy: 'x' } }, /csp\.mode: must be "enforce" or "report-only"/],
    [{ csp: { mode: 'enforce', policy: '' } }, /csp\.policy: must not be empty/],
  ])('refuses %j', (extra, message) => {
    expect(problem(extra)).toMatch(message)
  })
})
