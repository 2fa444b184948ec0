import type { H3Event } from 'h3'
import { getConfig } from './config'
import { ipToBigInt, netContains, parseCidr, type Net } from '../geo/ip'

let _trusted: { source: string[]; nets: Net[] } | undefined

function _trustedNets(): Net[] {
  const source = getConfig().trustedProxies
  if (_trusted?.source !== source) _trusted = { source, nets: source.map(parseCidr) }
  return _trusted.nets
}

const _unmapped = (addr: string) => (addr.startsWith('::ffff:') && addr.includes('.') ? addr.slice(7) : addr)

function _isTrusted(addr: string, nets: Net[]): boolean {
  try {
    const { family, value } = ipToBigInt(addr)
    return nets.some((n) => netContains(n, family, value))
  } catch {
    return false
  }
}

/**
 * The client's address: the connection's peer, unless that peer is a trusted
 * proxy (PANEL_TRUSTED_PROXIES), in which case X-Forwarded-For is read from the
 * right and the first address that is not itself a trusted proxy wins. A client
 * can prepend anything to the header; only what trusted hops appended counts.
 */
export function clientIpOf(event: H3Event): string | null {
  const addr = event.node.req.socket?.remoteAddress
  if (!addr) return null
  const peer = _unmapped(addr)
  const nets = _trustedNets()
  if (!nets.length || !_isTrusted(peer, nets)) return peer
  const header = event.node.req.headers['x-forwarded-for']
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((h) => _unmapped(h.trim()))
    .filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (!_isTrusted(hop, nets)) {
      try {
        ipToBigInt(hop)
        return hop
      } catch {
        return peer
      }
    }
  }
  return hops[0] ?? peer
}

/**
 * The last request that came through a proxy (it carried X-Forwarded-For) while
 * PANEL_TRUSTED_PROXIES is empty: the panel then takes the proxy for every
 * visitor, so audit rows name the proxy and all visitors share one login
 * throttle (docs/security.md, trusted proxies). Only with an empty list: a
 * configured list is the operator's decision, and a visitor sending the header
 * directly could otherwise raise the warning against a correct setup.
 */
let _forwardedUntrusted: { peer: string; atMs: number } | undefined

function _noteForwarded(event: H3Event, peer: string): void {
  if (event.node.req.headers['x-forwarded-for'] !== undefined) _forwardedUntrusted = { peer, atMs: Date.now() }
}

/** Called for every /api request (middleware/10-auth.ts): the only requests whose address the panel uses. */
export function noteClientAddress(event: H3Event): void {
  const addr = event.node.req.socket?.remoteAddress
  if (addr && !_trustedNets().length) _noteForwarded(event, _unmapped(addr))
}

/** The client-address part of /api/system/health and /api/dashboard/health. */
export function readClientAddressHealth() {
  const trusted = getConfig().trustedProxies
  const seen = trusted.length ? undefined : _forwardedUntrusted
  return {
    trusted_proxies: [...trusted],
    forwarded_by: seen ? { peer: seen.peer, last_at: new Date(seen.atMs).toISOString() } : null,
    warning: seen
      ? `requests reach the panel through a proxy at ${seen.peer} (they carry X-Forwarded-For) while PANEL_TRUSTED_PROXIES is empty: ` +
        'every visitor looks like that proxy, in audit rows and to the login throttle, so failed logins of anyone slow down everyone. ' +
        `Set PANEL_TRUSTED_PROXIES=${seen.peer} (and any CDN's ranges) and restart the panel (docs/security.md, trusted proxies)`
      : null,
  }
}
