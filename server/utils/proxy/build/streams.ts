import type { Json, ProxySnapshot } from './types'

// The `layer4` app of the proxy configuration: one server per stream listener
// (docs/streams.md). Each server's routes are the stream's guards
// (stream-guards.ts, in the chain order of docs/streams.md), then the proxy to its
// target group, wrapped by the connection log handler (stream-logging.ts).

/** The layer-4 app, or null when no enabled stream needs one (nothing emitted: existing configurations keep their bytes). */
export function buildStreamsApp(_snapshot: ProxySnapshot, _warnings: string[]): Json | null {
  return null
}
