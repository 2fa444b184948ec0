import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildCrowdsecApp, buildCrowdsecHandler } from '../../server/utils/proxy/build/crowdsec'
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
