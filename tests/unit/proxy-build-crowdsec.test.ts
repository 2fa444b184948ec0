import { describe, expect, it } from 'vitest'
import { buildProxyConfig, hashProxyConfig } from '../../server/utils/proxy/build/index'
import { buildBouncerWarmupRoute, buildCrowdsecApp, buildCrowdsecHandler, stripBouncerWarmup } from '../../server/utils/proxy/build/crowdsec'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const withKey = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }

describe('buildCrowdsecApp — apps.crowdsec', () => {
  it('streams decisions from the local API, with the trailing slash on api_url', () => {
    expect(buildCrowdsecApp(withKey)).toEqual({ api_url: 'http://crowdsec:8080/', api_key: 'bouncer-key', ticker_interval: '15s', enable_streaming: true })
    expect(buildCrowdsecApp({ ...withKey, lapiUrl: 'http://crowdsec:8080/' }).api_url).toBe('http://crowdsec:8080/')
  })

  it('adds AppSec, failing open, when an AppSec URL is known', () => {
    expect(buildCrowdsecApp({ ...withKey, appsecUrl: 'http://crowdsec:7422' })).toMatchObject({ appsec_url: 'http://crowdsec:7422', appsec_fail_open: true })
  })

  it('is emitted once, however many hosts use the bouncer', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2 })] })) as any
    expect(config.apps.crowdsec).toEqual(buildCrowdsecApp(withKey))
  })
})

describe('buildCrowdsecHandler — per host', () => {
  it('is the first handler of the chain for hosts with bouncer_enabled, absent for the others', () => {
    expect(buildCrowdsecHandler()).toEqual({ handler: 'crowdsec' })
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot({ auth_required: true }), buildHostSnapshot({ id: 2, bouncer_enabled: false })] }))
    expect(hostSubroutes(config, 'host1.example.test')[0].handle[0]).toEqual({ handler: 'crowdsec' })
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).not.toContain('crowdsec')
  })

  it('no host wants it: no handler and no app', () => {
    const { config, warnings } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot({ bouncer_enabled: false })] }))
    expect(JSON.stringify(config)).not.toContain('crowdsec')
    expect(warnings).toEqual([])
  })
})

describe('buildCrowdsecHandler — module or key missing', () => {
  it('without the crowdsec module: nothing of crowdsec, one warning naming the hosts', () => {
    const { config, warnings } = buildProxyConfig(buildSnapshot({ modules: ['waf'], security: withKey, hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2 })] }))
    expect(JSON.stringify(config)).not.toContain('crowdsec')
    expect(warnings).toEqual(['the proxy has no crowdsec module (PROXY_MODULES); the bouncer is not applied to 2 host(s): host1.example.test, host2.example.test'])
  })

  it('also warns on a stock proxy (PROXY_MODULES=none), and caps the list of names', () => {
    const hosts = [1, 2, 3, 4, 5, 6, 7].map((id) => buildHostSnapshot({ id }))
    const { warnings } = buildProxyConfig(buildSnapshot({ modules: [], hosts }))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/not applied to 7 host\(s\): host1\.example\.test, .*host5\.example\.test and 2 more$/)
  })

  it('with the module but no bouncer key: nothing of crowdsec, and a warning', () => {
    const { config, warnings } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: { ...withKey, bouncerKey: null } }))
    expect(JSON.stringify(config)).not.toContain('crowdsec')
    expect(warnings.join()).toMatch(/no bouncer key is configured \(LAPI_BOUNCER_KEY\)/)
  })
})

describe('buildBouncerWarmupRoute — the sources banned at push time, refused while the new bouncer loads', () => {
  const warmup = { untilMs: 1_800_000_000_000, sources: ['198.51.100.200', '203.0.113.0/24'] }
  const tlsHost = buildHostSnapshot({ id: 3, domain: 'tls.example.test', tls_mode: 'auto' })

  it('is the first route of each server that has bouncer hosts, for those hosts only, until the given time', () => {
    const hosts = [buildHostSnapshot({ aliases: ['www.host1.example.test'] }), buildHostSnapshot({ id: 2, bouncer_enabled: false }), tlsHost]
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts, bouncerWarmup: warmup })) as any
    const http = config.apps.http.servers.http.routes[0], https = config.apps.http.servers.https.routes[0]
    expect(http).toEqual(buildBouncerWarmupRoute('http', ['host1.example.test', 'www.host1.example.test'], warmup))
    expect(https['@id']).toBe('bouncer_warmup_https')
    expect(https.match[0].host).toEqual(['tls.example.test'])
    expect(http.match[0].expression).toBe('int({time.now.unix_ms}) < 1800000000000')
    expect(http.handle[0].routes).toEqual([{ match: [{ client_ip: { ranges: warmup.sources } }], handle: [{ handler: 'static_response', status_code: 403 }] }])
  })

  it('nothing banned, or no host with the bouncer: no route', () => {
    const none = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, bouncerWarmup: { ...warmup, sources: [] } })).config
    expect(JSON.stringify(none)).not.toContain('bouncer_warmup')
    const off = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot({ bouncer_enabled: false })], bouncerWarmup: warmup })).config
    expect(JSON.stringify(off)).not.toContain('bouncer_warmup')
  })

  it('leaves the hash unchanged: the identity of a configuration is what the database says', () => {
    const base = buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot(), tlsHost] })
    const plain = buildProxyConfig(base).config
    const gated = buildProxyConfig({ ...base, bouncerWarmup: warmup }).config
    const later = buildProxyConfig({ ...base, bouncerWarmup: { untilMs: warmup.untilMs + 1, sources: ['192.0.2.1'] } }).config
    expect(JSON.stringify(gated)).not.toBe(JSON.stringify(plain))
    expect(hashProxyConfig(gated)).toBe(hashProxyConfig(plain))
    expect(hashProxyConfig(later)).toBe(hashProxyConfig(plain))
    expect(stripBouncerWarmup(gated)).toEqual(plain)
  })
})
