import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildRateLimitHandler } from '../../server/utils/proxy/build/rate-limit'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

describe('buildRateLimitHandler — per client', () => {
  it('allows rps + burst events per one-second window, keyed by the peer address, in a zone per host', () => {
    expect(buildRateLimitHandler(buildHostSnapshot({ id: 7, rate_limit_rps: 10, rate_limit_burst: 5 }))).toEqual({
      handler: 'rate_limit',
      rate_limits: { host_7: { key: '{http.request.remote.host}', window: '1s', max_events: 15 } },
    })
  })

  it('gives every host its own zone', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['ratelimit'], hosts: [1, 2].map((id) => buildHostSnapshot({ id, rate_limit_enabled: true, bouncer_enabled: false })) }))
    expect(Object.keys(hostSubroutes(config, 'host1.example.test')[0].handle[0].rate_limits)).toEqual(['host_1'])
    expect(Object.keys(hostSubroutes(config, 'host2.example.test')[0].handle[0].rate_limits)).toEqual(['host_2'])
  })
})

describe('buildRateLimitHandler — module and switch', () => {
  it('is absent for hosts without rate_limit_enabled', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['ratelimit'] }))
    expect(JSON.stringify(config)).not.toContain('rate_limit')
  })

  it('without the ratelimit module: no handler and a warning', () => {
    const r = buildProxyConfig(buildSnapshot({ modules: ['waf'], hosts: [buildHostSnapshot({ rate_limit_enabled: true, bouncer_enabled: false })] }))
    expect(JSON.stringify(r.config)).not.toContain('rate_limit')
    expect(r.warnings).toEqual(['host host1.example.test: the proxy has no ratelimit module; rate limit not applied'])
  })
})
