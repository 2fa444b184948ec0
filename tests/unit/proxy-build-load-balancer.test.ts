import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildUnknownHostRoute } from '../../server/utils/proxy/build/unknown-host'
import { buildUpstreamHandler } from '../../server/utils/proxy/build/load-balancer'
import { buildGroupSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const handlerOf = (overrides: Parameters<typeof buildGroupSnapshot>[0], warnings: string[] = []) =>
  buildUpstreamHandler(buildGroupSnapshot(overrides), warnings) as any

describe('buildUpstreamHandler — upstreams and selection', () => {
  it('dials every target in the group order, with the policy and a 2 s retry on another target', () => {
    const h = handlerOf({
      targets: [
        { address: '10.0.0.1:80', weight: 1 },
        { address: 'app:3000', weight: 1 },
      ],
      lb_policy: 'least_conn',
    })
    expect(h.handler).toBe('reverse_proxy')
    expect(h.upstreams).toEqual([{ dial: '10.0.0.1:80' }, { dial: 'app:3000' }])
    expect(h.load_balancing).toEqual({ selection_policy: { policy: 'least_conn' }, try_duration: '2s' })
  })

  it.each(['round_robin', 'least_conn', 'random', 'first', 'ip_hash'] as const)(
    '%s maps to the policy of the same name, without weights',
    (policy) => {
      const warnings: string[] = []
      expect(handlerOf({ lb_policy: policy }, warnings).load_balancing.selection_policy).toEqual({ policy })
      expect(warnings).toEqual([])
    },
  )

  it('weighted_round_robin carries the weights in target order and warns that it needs Caddy 2.7', () => {
    const warnings: string[] = []
    const h = handlerOf(
      {
        name: 'web',
        lb_policy: 'weighted_round_robin',
        targets: [
          { address: 'a:1', weight: 3 },
          { address: 'b:1', weight: 1 },
        ],
      },
      warnings,
    )
    expect(h.load_balancing.selection_policy).toEqual({ policy: 'weighted_round_robin', weights: [3, 1] })
    expect(warnings).toEqual(['target group web: weighted_round_robin needs Caddy 2.7 or newer'])
  })
})

describe('buildUpstreamHandler — health checks', () => {
  it('active check from the group, plus a passive one', () => {
    const h = handlerOf({ health_check: { path: '/healthz', interval_seconds: 5, expect_status: 204 } })
    expect(h.health_checks).toEqual({
      active: { uri: '/healthz', interval: '5s', expect_status: 204 },
      passive: { fail_duration: '30s', max_fails: 1 },
    })
  })

  it('no health check configured: none emitted', () => {
    expect(handlerOf({ health_check: null }).health_checks).toBeUndefined()
  })
})

describe('buildUpstreamHandler — transport', () => {
  it('plain http targets: no transport block', () => {
    expect(handlerOf({ scheme: 'http' }).transport).toBeUndefined()
  })

  it('https targets: TLS, verified by default', () => {
    expect(handlerOf({ scheme: 'https' }).transport).toEqual({ protocol: 'http', tls: {} })
  })

  it('https targets with tls_skip_verify: insecure_skip_verify', () => {
    expect(handlerOf({ scheme: 'https', tls_skip_verify: true }).transport).toEqual({
      protocol: 'http',
      tls: { insecure_skip_verify: true },
    })
  })

  it("drops an upstream's own X-Panel-Rule-Id from the response", () => {
    expect(handlerOf({}).headers).toEqual({ response: { delete: ['X-Panel-Rule-Id'] } })
  })
})

describe('buildUpstreamHandler — as the host default route', () => {
  it('is the last route of the host, to the host group', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ targetGroups: [buildGroupSnapshot({ targets: [{ address: 'web:8080', weight: 1 }] })] }),
    )
    const last = hostSubroutes(config, 'host1.example.test').at(-1)
    expect(last.match).toBeUndefined()
    expect(last.handle).toEqual([buildUpstreamHandler(buildGroupSnapshot({ targets: [{ address: 'web:8080', weight: 1 }] }), [])])
  })

  it('a host whose group is missing is skipped with a warning', () => {
    const r = buildProxyConfig(buildSnapshot({ targetGroups: [buildGroupSnapshot({ id: 2 })] }))
    // Only the ForwardAuth probe and the unknown-host refusal.
    expect((r.config as any).apps.http.servers.http.routes.map((route: any) => route['@id'])).toEqual([
      'panel_forward_auth_probe',
      buildUnknownHostRoute('http')['@id'],
    ])
    expect(r.warnings.join()).toMatch(/host host1\.example\.test: target group 1 is missing; host skipped/)
  })
})
