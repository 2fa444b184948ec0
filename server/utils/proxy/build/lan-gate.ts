import type { Json, ProxySnapshot, Route } from './types'

/** The spec's LAN ranges; everything else is a public source. */
export const LAN_RANGES = ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']
export const LAN_GATE_BODY = 'Access denied: LAN only\n'

/**
 * A matcher on the request's client address. Without trusted proxies that is
 * `remote_ip`, the connection's own peer (no header can change it; Caddy 2.6
 * has nothing else). With trusted proxies it is `client_ip`: the address Caddy
 * took from a client-address header, but only on a connection from a trusted
 * proxy, so the gate, the bouncer and the rate limit judge the same address.
 */
export function buildClientAddressMatcher(ranges: string[], clientIp: ProxySnapshot['clientIp']): Json {
  return clientIp.trustedProxies.length ? { client_ip: { ranges } } : { remote_ip: { ranges } }
}

/** First route of a LAN-only host: a public client address gets 403. */
export function buildLanGateRoute(clientIp: ProxySnapshot['clientIp']): Route {
  return {
    match: [{ not: [buildClientAddressMatcher(LAN_RANGES, clientIp)] }],
    handle: [{ handler: 'static_response', status_code: 403, body: LAN_GATE_BODY }],
    terminal: true,
  }
}

/**
 * The server options that make Caddy take the client address from the
 * operator's headers on connections from trusted proxies. Strict: the header
 * is read from the right, so a client cannot prepend an address of its choice.
 */
export function buildTrustedProxiesServerOptions(clientIp: ProxySnapshot['clientIp']): Json {
  if (!clientIp.trustedProxies.length) return {}
  return {
    trusted_proxies: { source: 'static', ranges: clientIp.trustedProxies },
    client_ip_headers: clientIp.headers,
    trusted_proxies_strict: 1,
  }
}
