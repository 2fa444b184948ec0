import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildRateLimitHandler, rateLimitZone } from '../../server/utils/proxy/build/rate-limit'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

describe('buildRateLimitHandler — per client', () => {
  it('allows rps + burst events per window of (rps + burst) / rps seconds, keyed by the peer address, in a zone per host', () => {
    expect(buildRateLimitHandler(buildHostSnapshot({ id: 7, rate_limit_rps: 10, rate_limit_burst: 5 }))).toEqual({
      handler: 'rate_limit',
      rate_limits: { host_7: { key: '{http.vars.client_ip}', window: '1500ms', max_events: 15 } },
    })
  })

  // Regression: window 1s with max_events rps + burst let rps + burst through every second, sustained.
  it.each([
    // rps, burst, max_events, window
    [2, 3, 5, '2500ms'],
    [50, 100, 150, '3000ms'],
    [10, 0, 10, '1000ms'],
    [1, 0, 1, '1000ms'],
    [1, 100_000, 100_001, '100001000ms'],
    // 4/3 s = 1333.33 ms: rounded up, so the rate stays at most rps.
    [3, 1, 4, '1334ms'],
    [100_000, 100_000, 200_000, '2000ms'],
  ])('rps %i burst %i -> max_events %i per %s', (rps, burst, maxEvents, window) => {
    expect(rateLimitZone(rps, burst)).toEqual({ max_events: maxEvents, window })
  })

  it('the long-run rate never exceeds rps and the instant allowance is rps + burst', () => {
    for (const rps of [1, 2, 3, 7, 50, 333, 100_000]) {
      for (const burst of [0, 1, 3, 100, 99_999]) {
        const z = rateLimitZone(rps, burst)
        const windowMs = Number(z.window.replace(/ms$/, ''))
        expect(z.max_events).toBe(rps + burst)
        expect((z.max_events * 1000) / windowMs).toBeLessThanOrEqual(rps)
        // ...and by less than one millisecond's worth of window.
        expect((z.max_events * 1000) / (windowMs - 1)).toBeGreaterThan(rps)
      }
    }
  })

  it('gives every host its own zone', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['ratelimit'],
        hosts: [1, 2].map((id) => buildHostSnapshot({ id, rate_limit_enabled: true, bouncer_enabled: false })),
      }),
    )
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
    const r = buildProxyConfig(
      buildSnapshot({ modules: ['waf'], hosts: [buildHostSnapshot({ rate_limit_enabled: true, bouncer_enabled: false })] }),
    )
    expect(JSON.stringify(r.config)).not.toContain('rate_limit')
    expect(r.warnings).toEqual(['host host1.example.test: the proxy has no ratelimit module; rate limit not applied'])
  })
})
