import type { ProxySnapshot, Route, StreamSnapshot } from './types'

// The guards of a stream's connections, before the proxy route, in the chain order
// of docs/streams.md: whitelist, LAN-only, access-list IP rules, engine down, CrowdSec.

/** The refusal routes of one stream, in order; [] when nothing guards it. */
export function buildStreamGuardRoutes(_stream: StreamSnapshot, _snapshot: ProxySnapshot): Route[] {
  return []
}
