import type { H3Event } from 'h3'

/** The connection's own peer address (never a forwarded header), without the IPv4-mapped prefix. */
export function clientIpOf(event: H3Event): string | null {
  const addr = event.node.req.socket?.remoteAddress
  if (!addr) return null
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr
}
