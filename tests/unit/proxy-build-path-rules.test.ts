import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildUpstreamHandler } from '../../server/utils/proxy/build/load-balancer'
import { RULE_ID_HEADER, buildRuleRoute, sortRules } from '../../server/utils/proxy/build/path-rules'
import { buildGroupSnapshot, buildHostSnapshot, buildRuleSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const groups = new Map([
  [1, buildGroupSnapshot()],
  [2, buildGroupSnapshot({ id: 2, name: 'api', targets: [{ address: 'api:9000', weight: 1 }] })],
])
const route = (o: Parameters<typeof buildRuleSnapshot>[0], warnings: string[] = []) =>
  buildRuleRoute(buildRuleSnapshot(o), buildHostSnapshot(), groups, warnings) as any

describe('buildRuleRoute — matching and tag', () => {
  it('matches the path, is terminal, and tags the response with the rule id first', () => {
    const r = route({ id: 9, path: '/api/*' })
    expect(r.match).toEqual([{ path: ['/api/*'] }])
    expect(r.terminal).toBe(true)
    expect(r.handle[0]).toEqual({ handler: 'headers', response: { set: { 'X-Panel-Rule-Id': ['9'] } } })
    expect(RULE_ID_HEADER).toBe('X-Panel-Rule-Id')
  })

  it('adds a method matcher (sorted) only when methods are given', () => {
    expect(route({ methods: ['POST', 'GET'] }).match).toEqual([{ path: ['/api/*'], method: ['GET', 'POST'] }])
    expect(route({ methods: [] }).match[0].method).toBeUndefined()
  })
})

describe('buildRuleRoute — actions', () => {
  it('proxy: reverse_proxy to the rule group', () => {
    expect(route({ action: 'proxy', target_group_id: 2 }).handle[1]).toEqual(buildUpstreamHandler(groups.get(2)!, []))
  })

  it('proxy without a group: the host group', () => {
    expect(route({ action: 'proxy', target_group_id: null }).handle[1].upstreams).toEqual([{ dial: '10.0.0.5:8080' }])
  })

  it('proxy to a missing group: rule skipped with a warning', () => {
    const warnings: string[] = []
    expect(route({ id: 4, action: 'proxy', target_group_id: 99 }, warnings)).toBeNull()
    expect(warnings).toEqual(['rule 4: target group 99 is missing; rule skipped'])
  })

  it('redirect: static_response with Location and the status', () => {
    expect(route({ action: 'redirect', redirect_url: 'https://new.example.test/', redirect_status: 301 }).handle[1]).toEqual({
      handler: 'static_response',
      status_code: 301,
      headers: { Location: ['https://new.example.test/'] },
    })
  })

  it('respond: static_response with the status and body', () => {
    expect(route({ action: 'respond', respond_status: 418, respond_body: 'teapot\n' }).handle[1]).toEqual({
      handler: 'static_response',
      status_code: 418,
      body: 'teapot\n',
    })
  })
})

describe('buildRuleRoute — order in the host', () => {
  it('sorts by priority, then id', () => {
    const rules = [
      buildRuleSnapshot({ id: 3, priority: 20 }),
      buildRuleSnapshot({ id: 2, priority: 20 }),
      buildRuleSnapshot({ id: 5, priority: 10 }),
    ]
    expect(sortRules(rules).map((r) => r.id)).toEqual([5, 2, 3])
  })

  it('rules follow the shared chain and come before the default route, which carries no tag', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        hosts: [buildHostSnapshot({ auth_required: true })],
        targetGroups: [...groups.values()],
        rules: [
          buildRuleSnapshot({ id: 3, priority: 50, path: '/old', action: 'redirect', redirect_url: '/new', redirect_status: 308 }),
          buildRuleSnapshot({ id: 2, priority: 10, path: '/api/*', action: 'proxy', target_group_id: 2 }),
          buildRuleSnapshot({ id: 8, host_id: 2, path: '/other-host' }),
        ],
      }),
    )
    const routes = hostSubroutes(config, 'host1.example.test')
    expect(routes).toHaveLength(4)
    expect(routes[0].handle[0].rewrite.uri).toBe('/auth/forward')
    expect(routes[1].handle[0].response.set['X-Panel-Rule-Id']).toEqual(['2'])
    expect(routes[2].handle[0].response.set['X-Panel-Rule-Id']).toEqual(['3'])
    expect(routes[3].match).toBeUndefined()
    expect(JSON.stringify(routes[3])).not.toContain('"set"')
    expect(JSON.stringify(config)).not.toContain('/other-host') // host 2 does not exist
  })
})
