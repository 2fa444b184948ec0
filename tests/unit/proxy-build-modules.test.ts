import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const everything = buildHostSnapshot({ waf_enabled: true, waf_mode: 'blocking', rate_limit_enabled: true, rate_limit_rps: 10, rate_limit_burst: 5, auth_required: true })
const withKey = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }

describe('buildCrowdsecHandler — the bouncer', () => {
  it('emits the app once and the handler for hosts with bouncer_enabled', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2, bouncer_enabled: false })] })) as any
    expect(config.apps.crowdsec).toEqual({ api_url: 'http://crowdsec:8080/', api_key: 'bouncer-key', ticker_interval: '15s', enable_streaming: true })
    expect(hostSubroutes(config, 'host1.example.test')[0].handle[0]).toEqual({ handler: 'crowdsec' })
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).not.toContain('crowdsec')
  })
  it('adds appsec with fail-open when an AppSec URL is known', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: { ...withKey, appsecUrl: 'http://crowdsec:7422' } })) as any
    expect(config.apps.crowdsec).toMatchObject({ appsec_url: 'http://crowdsec:7422', appsec_fail_open: true })
  })
  it('emits nothing of crowdsec without the module or without a bouncer key', () => {
    expect(JSON.stringify(buildProxyConfig(buildSnapshot({ modules: [], security: withKey })).config)).not.toContain('crowdsec')
    expect(JSON.stringify(buildProxyConfig(buildSnapshot({ modules: ['crowdsec'] })).config)).not.toContain('crowdsec')
  })
})

describe('buildRateLimitHandler — per client', () => {
  it('allows rps + burst per second per remote host', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['ratelimit'], hosts: [everything] }))
    const rl = hostSubroutes(config, 'host1.example.test')[0].handle.find((h: any) => h.handler === 'rate_limit')
    expect(rl.rate_limits).toEqual({ host_1: { key: '{http.request.remote.host}', window: '1s', max_events: 15 } })
  })
})

describe('buildWafHandler — Coraza with the CRS', () => {
  it('blocking mode sets thresholds before the CRS and the engine On, with a JSON audit log', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['waf'], hosts: [everything], waf: { inboundThreshold: 10, outboundThreshold: 8 } }))
    const waf = hostSubroutes(config, 'host1.example.test')[0].handle.find((h: any) => h.handler === 'waf')
    expect(waf.load_owasp_crs).toBe(true)
    const lines: string[] = waf.directives.split('\n')
    expect(lines[0]).toBe('Include @coraza.conf-recommended')
    expect(lines.findIndex((l) => l.includes('inbound_anomaly_score_threshold=10'))).toBeLessThan(lines.indexOf('Include @owasp_crs/*.conf'))
    expect(lines).toContain('SecRuleEngine On')
    expect(lines).toContain('SecAuditLogFormat JSON')
    expect(lines).toContain('SecAuditLogParts ABIJDEFHKZ')
    expect(lines).toContain('SecAuditLog /var/log/panel/waf-audit.log')
  })
  it('detection mode is DetectionOnly', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['waf'], hosts: [buildHostSnapshot({ waf_enabled: true })] }))
    expect(JSON.stringify(config)).toContain('SecRuleEngine DetectionOnly')
  })
})

describe('handler order — HOST_HANDLER_ORDER', () => {
  it('runs LAN gate, bouncer, rate limit, WAF, ForwardAuth, rules, upstream in that order', () => {
    const { config } = buildProxyConfig(buildSnapshot({
      modules: ['crowdsec', 'waf', 'ratelimit'], security: withKey,
      hosts: [buildHostSnapshot({ ...everything, lan_only: true })],
      rules: [{ id: 7, host_id: 1, priority: 1, path: '/x', methods: [], action: 'respond', target_group_id: null, redirect_url: null, redirect_status: null, respond_status: 204, respond_body: '' }],
    }))
    const routes = hostSubroutes(config, 'host1.example.test')
    expect(routes[0].handle[0].status_code).toBe(403)
    expect(routes[1].handle.map((h: any) => h.rewrite ? 'forward_auth' : h.handler)).toEqual(['crowdsec', 'rate_limit', 'waf', 'forward_auth'])
    expect(routes[2].match).toEqual([{ path: ['/x'] }])
    expect(routes[3].handle.at(-1).handler).toBe('reverse_proxy')
  })

  it('warns when a host wants a module the proxy lacks, and the config holds none of it', () => {
    const r = buildProxyConfig(buildSnapshot({ modules: ['dns'], hosts: [everything] }))
    expect(r.warnings.join('\n')).toMatch(/no waf module/)
    expect(r.warnings.join('\n')).toMatch(/no ratelimit module/)
    const text = JSON.stringify(r.config)
    expect(text).not.toContain('"waf"')
    expect(text).not.toContain('rate_limit')
  })
})
