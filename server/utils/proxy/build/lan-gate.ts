import type { Route } from './types'

/** The spec's LAN ranges; everything else is a public source. */
export const LAN_RANGES = ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']
export const LAN_GATE_BODY = 'Access denied: LAN only\n'

/**
 * First route of a LAN-only host. `remote_ip` is the connection's own peer
 * address: no forwarded header can change it (never `forwarded: true`).
 */
export function buildLanGateRoute(): Route {
  return {
    match: [{ not: [{ remote_ip: { ranges: LAN_RANGES } }] }],
    handle: [{ handler: 'static_response', status_code: 403, body: LAN_GATE_BODY }],
    terminal: true,
  }
}
