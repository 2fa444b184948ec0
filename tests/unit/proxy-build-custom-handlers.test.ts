import { describe, expect, it } from 'vitest'
import { buildForwardAuthHeaderStripHandler } from '../../server/utils/proxy/build/forward-auth'
import { hostBody } from '../../server/utils/hosts/schemas'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { CUSTOM_HANDLERS_MAX_BYTES, customHandlersProblem } from '../../server/utils/proxy/build/custom-handlers'
import { buildHostSnapshot, buildRuleSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const HEADER = { handler: 'headers', response: { set: { 'X-Custom': ['yes'] } } }
const DOMAIN = 'host1.example.test'

function routesOf(overrides: Parameters<typeof buildHostSnapshot>[0], rules = [buildRuleSnapshot()]) {
  const built = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot(overrides)], rules, modules: ['ratelimit'] }))
  return { routes: hostSubroutes(built.config, DOMAIN), warnings: built.warnings, config: built.config }
}

describe('custom handlers — in the host chain', () => {
  it('an empty list (every host before migration 0040) changes nothing: the same bytes as a host without the fields', () => {
    const withEmpty = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ rate_limit_enabled: true })], rules: [buildRuleSnapshot()] }),
    )
    const { custom_handlers: _h, custom_handlers_at: _a, ...legacy } = buildHostSnapshot({ rate_limit_enabled: true })
    const without = buildProxyConfig(buildSnapshot({ hosts: [legacy as never], rules: [buildRuleSnapshot()] }))
    expect(stableStringify(withEmpty.config)).toBe(stableStringify(without.config))
    expect(stableStringify(withEmpty.config)).not.toContain('X-Custom')
  })

  it('before_proxy: a route of their own after the path rules, just before the default upstream', () => {
    const { routes } = routesOf({ custom_handlers: [HEADER], custom_handlers_at: 'before_proxy' })
    const last = routes.length - 1
    expect(routes[last].handle[0].handler).toBe('reverse_proxy')
    expect(routes[last - 1]).toEqual({ handle: [HEADER] })
    // The path rule (terminal) comes first: a request it answers never meets the custom handlers.
    expect(routes[last - 2].match).toEqual([{ path: ['/api/*'] }])
  })

  it('after_security: at the end of the gates (after the rate limit), before the path rules', () => {
    const { routes } = routesOf({
      custom_handlers: [HEADER, { handler: 'vars', a: 'b' }],
      custom_handlers_at: 'after_security',
      rate_limit_enabled: true,
    })
    expect(routes[0].handle.map((h: { handler: string }) => h.handler)).toEqual(['rate_limit', 'headers', 'headers', 'vars'])
    expect(routes[1].match).toEqual([{ path: ['/api/*'] }])
    expect(JSON.stringify(routes.slice(1))).not.toContain('X-Custom')
  })

  it('after_security with no gate: a route of their own, still before the path rules', () => {
    const { routes } = routesOf({ custom_handlers: [HEADER], custom_handlers_at: 'after_security' })
    // After the removal of the client's X-Auth-* headers (the forward_auth step of a host without ForwardAuth).
    expect(routes[0]).toEqual({ handle: [buildForwardAuthHeaderStripHandler(), HEADER] })
  })

  it('a stored list that fails the check is left out with a warning, never pushed', () => {
    const { routes, warnings } = routesOf({ custom_handlers: [{ handler: 'file_server', root: '/' }] })
    expect(JSON.stringify(routes)).not.toContain('file_server')
    expect(warnings.join('\n')).toMatch(
      /host host1\.example\.test: custom handlers left out: handler 1: the module "file_server" is not allowed/,
    )
  })

  it('is deterministic and does not share the stored objects', () => {
    const host = buildHostSnapshot({ custom_handlers: [HEADER] })
    const a = buildProxyConfig(buildSnapshot({ hosts: [host] }))
    const b = buildProxyConfig(buildSnapshot({ hosts: [host] }))
    expect(stableStringify(a.config)).toBe(stableStringify(b.config))
    ;(hostSubroutes(a.config, DOMAIN).at(-2).handle[0].response.set as Record<string, string[]>)['X-Custom']![0] = 'changed'
    expect(HEADER.response.set['X-Custom'][0]).toBe('yes')
  })
})

describe('custom handlers — the check', () => {
  it('accepts the allowed modules, nested in a subroute too', () => {
    expect(customHandlersProblem([HEADER, { handler: 'static_response', status_code: 200, body: 'hi' }])).toBeNull()
    expect(customHandlersProblem([{ handler: 'subroute', routes: [{ match: [{ path: ['/x'] }], handle: [HEADER] }] }])).toBeNull()
  })

  it.each([
    ['file_server', { handler: 'file_server', root: '/etc' }],
    ['reverse_proxy', { handler: 'reverse_proxy', upstreams: [{ dial: '127.0.0.1:2019' }] }],
    ['templates', { handler: 'templates' }],
    ['crowdsec', { handler: 'crowdsec' }],
    ['acme_server', { handler: 'acme_server' }],
    ['log_append', { handler: 'log_append', key: 'status', value: '200' }],
  ])('refuses the module %s by name', (name, handler) => {
    expect(customHandlersProblem([handler])).toBe(
      `handler 1: the module "${name}" is not allowed in custom handlers; allowed: copy_response_headers, encode, error, headers, map, request_body, rewrite, static_response, subroute, timeouts, vars`,
    )
  })

  it('refuses a forbidden module smuggled inside a subroute, at any depth, and in its error routes', () => {
    const nested = {
      handler: 'subroute',
      routes: [{ handle: [{ handler: 'subroute', routes: [{ handle: [HEADER, { handler: 'file_server', root: '/' }] }] }] }],
    }
    expect(customHandlersProblem([HEADER, nested])).toMatch(/^handler 2: the module "file_server" is not allowed/)
    const inErrors = { handler: 'subroute', routes: [], errors: { routes: [{ handle: [{ handler: 'reverse_proxy' }] }] } }
    expect(customHandlersProblem([inErrors])).toMatch(/^handler 1: the module "reverse_proxy" is not allowed/)
  })

  it('refuses placeholders that read the environment or files, and the file matcher', () => {
    expect(customHandlersProblem([{ handler: 'static_response', body: 'key={env.CROWDSEC_BOUNCER_KEY}' }])).toMatch(
      /\{env\.\*\} and \{file\.\*\} are refused/,
    )
    expect(customHandlersProblem([{ handler: 'headers', response: { set: { X: ['{file./etc/passwd}'] } } }])).toMatch(/are refused/)
    const fileMatcher = {
      handler: 'subroute',
      routes: [{ match: [{ not: [{ file: { try_files: ['/etc/passwd'] } }] }], handle: [HEADER] }],
    }
    expect(customHandlersProblem([fileMatcher])).toMatch(/the "file" matcher is refused/)
  })

  it("refuses the panel's own X-Panel-* headers, set or deleted", () => {
    expect(customHandlersProblem([{ handler: 'headers', response: { set: { 'x-panel-rule-id': ['7'] } } }])).toBe(
      'handler 1: the header "x-panel-rule-id" is refused: headers named X-Panel-* are the panel\'s own',
    )
    expect(customHandlersProblem([{ handler: 'headers', response: { delete: ['X-Panel-Appsec-Threshold'] } }])).toMatch(
      /X-Panel-\* are the panel's own/,
    )
  })

  it('refuses @id keys, non-objects and objects without a handler', () => {
    expect(customHandlersProblem([{ ...HEADER, '@id': 'panel_unknown_host_http' }])).toMatch(/the key "@id" is refused/)
    expect(customHandlersProblem(['headers'])).toMatch(/^handler 1: must be a JSON object with a "handler" field/)
    expect(customHandlersProblem([{ status_code: 200 }])).toMatch(/^handler 1: must be a JSON object with a "handler" field/)
  })

  it('is bounded: 32 handlers and 32 KiB of JSON', () => {
    expect(customHandlersProblem(Array.from({ length: 32 }, () => HEADER))).toBeNull()
    expect(customHandlersProblem(Array.from({ length: 33 }, () => HEADER))).toBe('at most 32 handlers')
    const big = [{ handler: 'static_response', body: 'x'.repeat(CUSTOM_HANDLERS_MAX_BYTES) }]
    expect(customHandlersProblem(big)).toMatch(/bytes of JSON; at most 32768 \(32 KiB\)/)
  })

  it('the host body names the field and the problem (what the API answers with 400)', () => {
    const base = { domain: 'a.example.test', target_group_id: 1, tls_mode: 'none' }
    const bad = hostBody.safeParse({ ...base, custom_handlers: [{ handler: 'file_server' }] })
    expect(bad.success).toBe(false)
    expect(bad.error!.issues[0]!.path).toEqual(['custom_handlers'])
    expect(hostBody.safeParse({ ...base, custom_handlers_at: 'first' }).error!.issues[0]!.message).toBe(
      'must be one of after_security, before_proxy',
    )
    expect(hostBody.parse({ ...base, custom_handlers: [HEADER] }).custom_handlers).toEqual([HEADER])
  })
})
