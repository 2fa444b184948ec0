import type { Json, StreamSnapshot } from './types'

// One log line per stream connection (docs/streams.md, "Connection rows").

/** The handler that logs a connection of this stream when it closes, placed before the proxy; null: none. */
export function buildStreamConnectionLogHandler(_stream: StreamSnapshot): Json | null {
  return null
}
