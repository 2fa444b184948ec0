import type { HostSnapshot, Json } from './types'

/**
 * The sliding window that makes both numbers mean what they say. caddy-ratelimit v0.1.0
 * (ringbuffer.go) lets a request through when fewer than `max_events` requests passed in the
 * last `window`. With max_events = rps + burst and window = (rps + burst) / rps seconds:
 * - at most rps + burst requests at once (the whole window's allowance);
 * - in the long run exactly rps a second: max_events per window, and any span of T seconds
 *   lets at most (rps + burst) * (floor(T / window) + 1) <= rps + burst + rps * T through,
 *   never more than nginx's token bucket with the same rate and burst would.
 * Unlike a token bucket, the allowance comes back a window after it was spent, not evenly.
 * The window is rounded up to whole milliseconds, so the rate is at most rps, never above.
 */
export function rateLimitZone(rps: number, burst: number): { max_events: number; window: string } {
  const maxEvents = rps + burst
  return { max_events: maxEvents, window: `${Math.ceil((maxEvents * 1000) / rps)}ms` }
}

/**
 * Per-client limit: rps sustained, rps + burst at once. The client is Caddy's
 * client address: the connection's peer, or with trusted proxies the address
 * they forwarded, so one CDN does not share one allowance among all its visitors.
 */
export function buildRateLimitHandler(host: HostSnapshot): Json {
  return {
    handler: 'rate_limit',
    rate_limits: {
      [`host_${host.id}`]: { key: '{http.vars.client_ip}', ...rateLimitZone(host.rate_limit_rps, host.rate_limit_burst) },
    },
  }
}
