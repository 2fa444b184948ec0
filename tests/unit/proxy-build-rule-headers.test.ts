import { describe, expect, it } from 'vitest'
import { describeZodError } from '../../server/utils/core/validate'
import { ruleBody } from '../../server/utils/hosts/schemas'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { buildGroupSnapshot, buildHostSnapshot, buildRuleSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

// Header rules of a path rule (docs/hosts.md, "Header rules"): after the host's, only on the rule's requests.

const h = (direction: 'request' | 'response', action: 'set' | 'add' | 'remove', name: string, value: string | null = null) => ({
  direction,
  action,
  name,
  value,
})
const proxyRule = (over: Parameters<typeof buildRuleSnapshot>[0] = {}) =>
  buildRuleSnapshot({ action: 'proxy', target_group_id: null, respond_status: null, respond_body: null, ...over })
const routesOf = (host: ReturnType<typeof buildHostSnapshot>, rules: ReturnType<typeof buildRuleSnapshot>[]) =>
  hostSubroutes(buildProxyConfig(buildSnapshot({ hosts: [host], targetGroups: [buildGroupSnapshot()], rules })).config, host.domain)
const ruleRoute = (routes: any[]) => routes.find((r) => r.match?.[0]?.path)
const hostResponseRoute = (routes: any[]) => routes.find((r) => r.handle?.[0]?.response?.deferred && !r.match)

describe('path rule header rules — builder', () => {
  it('a rule without header rules (and its host) builds the same configuration as before: tag, then the action', () => {
    const host = buildHostSnapshot({ header_rules: [h('response', 'set', 'X-Host', 'a')] })
    const withField = routesOf(host, [proxyRule({ header_rules: [] })])
    // A rule snapshot of before migration 0042 has no field at all.
    const { header_rules: _gone, ...legacy } = proxyRule() as any
    const withoutField = routesOf(host, [legacy])
    expect(stableStringify(withField)).toBe(stableStringify(withoutField))
    expect(ruleRoute(withField).handle.map((x: any) => x.handler)).toEqual(['headers', 'reverse_proxy'])
    expect(hostResponseRoute(withField).handle[0].response.require).toBeUndefined()
  })

  it('request headers of a proxy rule apply inside its route, after the host request headers', () => {
    const host = buildHostSnapshot({ header_rules: [h('request', 'set', 'X-Scope', 'host')] })
    const routes = routesOf(host, [proxyRule({ header_rules: [h('request', 'set', 'X-Scope', 'api'), h('request', 'remove', 'X-Debug')] })])
    const route = ruleRoute(routes)
    expect(route.handle[1]).toEqual({ handler: 'headers', request: { set: { 'X-Scope': ['api'] }, delete: ['X-Debug'] } })
    expect(route.handle[2].handler).toBe('reverse_proxy')
    // The host's own request headers still run for every request, before the rules.
    const hostIndex = routes.findIndex((r) => r.handle?.some((x: any) => x.request?.set?.['X-Scope']?.[0] === 'host'))
    expect(hostIndex).toBeGreaterThanOrEqual(0)
    expect(hostIndex).toBeLessThan(routes.indexOf(route))
  })

  it('response headers: the rule applies the host operations then its own (deferred), and the host handler skips rule answers', () => {
    const host = buildHostSnapshot({ security_headers: true, header_rules: [h('response', 'set', 'X-Scope', 'host')] })
    const routes = routesOf(host, [
      proxyRule({
        id: 1,
        path: '/api/*',
        header_rules: [h('response', 'set', 'x-scope', 'api'), h('response', 'remove', 'X-Frame-Options')],
      }),
      proxyRule({ id: 2, path: '/plain/*' }),
    ])
    expect(hostResponseRoute(routes).handle[0].response.require).toEqual({ headers: { 'X-Panel-Rule-Id': null } })
    const [api, plain] = routes.filter((r) => r.match?.[0]?.path)
    const apiResponse = api.handle[1].response
    expect(apiResponse.deferred).toBe(true)
    expect(apiResponse.set['X-Scope']).toEqual(['api'])
    expect(apiResponse.delete).toEqual(['X-Frame-Options'])
    // Another rule of the host keeps the host's response headers (they moved into its route).
    expect(plain.handle[1].response).toMatchObject({ deferred: true, set: { 'X-Scope': ['host'], 'X-Frame-Options': ['SAMEORIGIN'] } })
  })

  it('redirect and respond rules get the response headers, never the request ones', () => {
    const host = buildHostSnapshot()
    const headers = [h('request', 'set', 'X-To-Upstream', '1'), h('response', 'set', 'Cache-Control', 'no-store')]
    for (const over of [
      { action: 'redirect' as const, redirect_url: '/new', redirect_status: 301 as const, header_rules: headers },
      { action: 'respond' as const, respond_status: 200, respond_body: 'ok', header_rules: headers },
    ]) {
      const route = ruleRoute(routesOf(host, [buildRuleSnapshot(over)]))
      expect(route.handle[1]).toEqual({ handler: 'headers', response: { set: { 'Cache-Control': ['no-store'] }, deferred: true } })
      expect(route.handle[2].handler).toBe('static_response')
      expect(JSON.stringify(route)).not.toContain('X-To-Upstream')
    }
  })
})

describe('path rule header rules — validation', () => {
  const parse = (header_rules: unknown) => ruleBody.safeParse({ path: '/api/*', action: 'proxy', header_rules })
  it('defaults to none and takes the host rule shape', () => {
    expect(ruleBody.parse({ path: '/a', action: 'proxy' }).header_rules).toEqual([])
    expect(parse([h('response', 'set', 'X-A', 'b')]).success).toBe(true)
  })
  it('refuses what the host refuses, naming the field path', () => {
    const r = parse([h('request', 'set', 'X-Auth-User', 'admin')])
    expect(r.success).toBe(false)
    expect(describeZodError(r.error!)).toMatch(/^header_rules\.0\.name: is refused: X-Auth-User/)
    const v = parse([h('response', 'set', 'X-A', '{http.request.host}')])
    expect(describeZodError(v.error!)).toMatch(/^header_rules\.0\.value: must not contain \{ or \}/)
  })
})
