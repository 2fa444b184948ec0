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
