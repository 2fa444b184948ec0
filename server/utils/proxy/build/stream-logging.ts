import type { Json, StreamSnapshot } from './types'

// One log line per stream connection (docs/streams.md, "Connection rows").

/** The logger of the project's connection log handler (deploy/proxy/caddy/streamext/connlog.go). */
export const STREAM_CONN_LOGGER = 'layer4.handlers.panel_conn_log'
/** The logger of the project's refusal handler (streamext/refuse.go): "connection refused" lines. */
export const STREAM_REFUSE_LOGGER = 'layer4.handlers.panel_refuse'
/**
 * The selection policy wrapped around each stream proxy's own (streamext/upstream.go): it notes the
 * upstream chosen on the connection, and the connection log handler's line names it (`upstream`).
 */
export const STREAM_UPSTREAM_POLICY = 'panel_record_upstream'
/** Both go to this file in PROXY_LOG_DIR, which the log ingester reads as the `layer4` source. */
export const STREAM_LOG_FILE = 'layer4.log'

/**
 * The handler that logs a connection of this stream when it closes, placed before the proxy; null: none.
 * It wraps the proxy (a layer-4 middleware), so its line carries the bytes each way and the proxy's error
 * as the close reason; the stream id names the stream in the row (the ingester looks its name up).
 */
export function buildStreamConnectionLogHandler(stream: StreamSnapshot): Json | null {
  return { handler: 'panel_conn_log', stream_id: stream.id }
}
