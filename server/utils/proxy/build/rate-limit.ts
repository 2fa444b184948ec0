import type { HostSnapshot, Json } from './types'

/** Per-client limit: rps sustained plus burst, counted over a one-second window. */
export function buildRateLimitHandler(host: HostSnapshot): Json {
  return {
    handler: 'rate_limit',
    rate_limits: {
      [`host_${host.id}`]: { key: '{http.request.remote.host}', window: '1s', max_events: host.rate_limit_rps + host.rate_limit_burst },
    },
  }
}
