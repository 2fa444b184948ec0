import type { Json, TargetGroupSnapshot } from './types'

/** Response headers only the proxy may set: an upstream's copy is dropped. */
export const INTERNAL_RESPONSE_HEADERS = ['X-Panel-Rule-Id']

/**
 * reverse_proxy to a target group: upstreams (in the group's order, which the
 * `first` policy relies on), selection policy, active and passive health checks,
 * TLS to the targets. An upstream's own copy of the rule tag is dropped, so it
 * cannot forge a rule id in the access log.
 */
export function buildUpstreamHandler(group: TargetGroupSnapshot, warnings: string[]): Json {
  const policy: Json = { policy: group.lb_policy }
  if (group.lb_policy === 'weighted_round_robin') {
    policy.weights = group.targets.map((t) => t.weight)
    // Added in Caddy 2.7.0 (caddy #5579); stock 2.6.2 rejects the whole /load
    // ("unknown module: http.reverse_proxy.selection_policies.weighted_round_robin").
    warnings.push(`target group ${group.name}: weighted_round_robin needs Caddy 2.7 or newer`)
  }
  const handler: Json = {
    handler: 'reverse_proxy',
    upstreams: group.targets.map((t) => ({ dial: t.address })),
    headers: { response: { delete: INTERNAL_RESPONSE_HEADERS } },
    // A target that refuses the connection is retried on another for up to 2 s,
    // so a target going down costs clients nothing before its health check notices.
    load_balancing: { selection_policy: policy, try_duration: '2s' },
  }
  if (group.health_check) {
    handler.health_checks = {
      active: {
        uri: group.health_check.path,
        interval: `${group.health_check.interval_seconds}s`,
        expect_status: group.health_check.expect_status,
      },
      passive: { fail_duration: '30s', max_fails: 1 },
    }
  }
  if (group.scheme === 'https') handler.transport = { protocol: 'http', tls: group.tls_skip_verify ? { insecure_skip_verify: true } : {} }
  return handler
}
