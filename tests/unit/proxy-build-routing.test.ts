import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify, hashProxyConfig, assertSafeHostname } from '../../server/utils/proxy/build/index'
import { buildGroupSnapshot, buildHostSnapshot, buildRuleSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

describe('buildUpstreamHandler — load balancing and health checks', () => {
  it('dials every target with the policy, retries, and active + passive checks', () => {
    const { config } = buildProxyConfig(buildSnapshot({ targetGroups: [buildGroupSnapshot({
      targets: [{ address: '10.0.0.1:80', weight: 1 }, { address: 'app:3000', weight: 1 }], lb_policy: 'least_conn',
      health_check: { path: '/healthz', interval_seconds: 5, expect_status: 204 },
    })] }))
    const rp = hostSubroutes(config, 'host1.example.test').at(-1).handle.at(-1)
    expect(rp.upstreams).toEqual([{ dial: '10.0.0.1:80' }, { dial: 'app:3000' }])
    expect(rp.load_balancing).toEqual({ selection_policy: { policy: 'least_conn' }, try_duration: '2s' })
    expect(rp.health_checks.active).toEqual({ uri: '/healthz', interval: '5s', expect_status: 204 })
    expect(rp.health_checks.passive).toEqual({ fail_duration: '30s', max_fails: 1 })
    expect(rp.headers).toEqual({ response: { delete: ['X-Panel-Rule-Id'] } })
  })
  it('speaks TLS to https targets, optionally without verification', () => {
    const { config } = buildProxyConfig(buildSnapshot({ targetGroups: [buildGroupSnapshot({ scheme: 'https', tls_skip_verify: true })] }))
    expect(hostSubroutes(config, 'host1.example.test').at(-1).handle.at(-1).transport).toEqual({ protocol: 'http', tls: { insecure_skip_verify: true } })
  })
  it('weighted round robin carries the weights and warns about the Caddy version', () => {
    const r = buildProxyConfig(buildSnapshot({ targetGroups: [buildGroupSnapshot({ lb_policy: 'weighted_round_robin', targets: [{ address: 'a:1', weight: 3 }, { address: 'b:1', weight: 1 }] })] }))
    expect(hostSubroutes(r.config, 'host1.example.test').at(-1).handle.at(-1).load_balancing.selection_policy).toEqual({ policy: 'weighted_round_robin', weights: [3, 1] })
    expect(r.warnings.join()).toMatch(/Caddy 2.7/)
  })
})

describe('buildRuleRoute — path rules', () => {
  it('orders rules by priority, tags each with its id, and keeps the default route last', () => {
    const { config } = buildProxyConfig(buildSnapshot({
      targetGroups: [buildGroupSnapshot(), buildGroupSnapshot({ id: 2, name: 'api', targets: [{ address: 'api:9000', weight: 1 }] })],
      rules: [
        buildRuleSnapshot({ id: 3, priority: 50, path: '/old', action: 'redirect', redirect_url: 'https://new.example.test/', redirect_status: 301, respond_status: null, respond_body: null }),
        buildRuleSnapshot({ id: 2, priority: 10, path: '/api/*', methods: ['POST', 'GET'], action: 'proxy', target_group_id: 2 }),
      ],
    }))
    const routes = hostSubroutes(config, 'host1.example.test')
    expect(routes[0].match).toEqual([{ path: ['/api/*'], method: ['GET', 'POST'] }])
    expect(routes[0].handle[0]).toEqual({ handler: 'headers', response: { set: { 'X-Panel-Rule-Id': ['2'] } } })
    expect(routes[0].handle[1].upstreams).toEqual([{ dial: 'api:9000' }])
    expect(routes[1].handle[1]).toEqual({ handler: 'static_response', status_code: 301, headers: { Location: ['https://new.example.test/'] } })
    expect(routes[2].match).toBeUndefined()
    expect(routes[2].handle).toHaveLength(1)
    expect(routes[2].handle[0].handler).toBe('reverse_proxy')
  })
})

describe('buildProxyConfig — the whole document', () => {
  it('always has the admin listener, storage and the three logs, with per-host logger names', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ aliases: ['a.example.test'] })] })) as any
    expect(config.admin).toEqual({ listen: '127.0.0.1:2019', config: { persist: false } })
    expect(config.storage).toEqual({ module: 'file_system', root: '/var/lib/caddy' })
    expect(config.logging.logs.access.writer.filename).toBe('/var/log/panel/access.log')
    expect(config.logging.logs.error).toMatchObject({ level: 'DEBUG', include: ['http.log.error'] })
    expect(config.apps.http.servers.http.logs.logger_names).toEqual({ 'host1.example.test': 'host_1', 'a.example.test': 'host_1' })
  })

  it('is valid with zero hosts: the plain server stays, no https server, no tls app', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [] })) as any
    expect(config.apps.http.servers.http.routes).toEqual([])
    expect(config.apps.http.servers.https).toBeUndefined()
    expect(config.apps.tls).toBeUndefined()
  })

  it('omits disabled hosts and skips hosts whose group is missing, with a warning', () => {
    const r = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ enabled: false }), buildHostSnapshot({ id: 2, target_group_id: 99 })] }))
    expect((r.config as any).apps.http.servers.http.routes).toEqual([])
    expect(r.warnings.join()).toMatch(/target group 99 is missing/)
  })

  it('is deterministic: shuffled input gives the same bytes and hash', () => {
    const hosts = [1, 2, 3, 4].map((id) => buildHostSnapshot({ id, lan_only: id % 2 === 0 }))
    const rules = [buildRuleSnapshot({ id: 1, host_id: 2 }), buildRuleSnapshot({ id: 2, host_id: 2, path: '/b' })]
    const a = buildProxyConfig(buildSnapshot({ hosts, rules })).config
    const b = buildProxyConfig(buildSnapshot({ hosts: [...hosts].reverse(), rules: [...rules].reverse() })).config
    expect(stableStringify(a)).toBe(stableStringify(b))
    expect(hashProxyConfig(a)).toBe(hashProxyConfig(b))
    expect(stableStringify({ b: 1, a: { d: 1, c: 2 } })).toBe('{"a":{"c":2,"d":1},"b":1}')
  })

  it('refuses names that would inject into the configuration', () => {
    for (const bad of ['a"b.test', 'a{b}.test', 'a b.test', 'a\nb.test', '']) expect(() => assertSafeHostname(bad)).toThrow(/unsafe host name/)
    expect(() => buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ domain: 'x"}.test' })] }))).toThrow(/unsafe/)
  })
})
