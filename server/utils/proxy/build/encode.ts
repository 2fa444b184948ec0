import type { HostSnapshot, Json, ProxySnapshot } from './types'

/** The global compression settings as the builder needs them (settings proxy.compression*). */
export interface CompressionSettings {
  enabled: boolean
  /** Media types (type/subtype, no parameters) whose responses are compressed. */
  types: string[]
  /** Responses shorter than this many bytes are sent as they are. */
  minimumBytes: number
}

/** Text-like answers worth compressing; never a streaming type (text/event-stream, gRPC). */
export const DEFAULT_COMPRESSION_TYPES = [
  'application/javascript',
  'application/json',
  'application/manifest+json',
  'application/wasm',
  'application/xhtml+xml',
  'application/xml',
  'font/otf',
  'font/ttf',
  'image/svg+xml',
  'text/css',
  'text/csv',
  'text/html',
  'text/javascript',
  'text/plain',
  'text/xml',
]
export const DEFAULT_COMPRESSION_MINIMUM_BYTES = 512

/**
 * Streaming answers: compressing them would hold events back in the encoder's buffer
 * (or cost a flush per event for nothing), so the settings refuse them.
 */
export const NEVER_COMPRESSED_TYPES = ['text/event-stream', 'application/grpc', 'application/x-ndjson']

/** Whether the host compresses: its own override, else the global setting (absent: off). */
export function hostCompresses(host: HostSnapshot, compression: ProxySnapshot['compression']): boolean {
  if (host.compression === 'on') return true
  if (host.compression === 'off') return false
  return compression?.enabled === true
}

/**
 * Caddy's `encode` handler: zstd preferred, then gzip, only for the listed media types
 * (the response matcher; `type/subtype*` also matches a `; charset=...` parameter) and
 * bodies of at least the minimum size. Caddy leaves alone a response that already has a
 * Content-Encoding (the upstream compressed it), so nothing is compressed twice.
 */
export function buildEncodeHandler(compression: ProxySnapshot['compression']): Json | null {
  const settings = compression ?? { types: DEFAULT_COMPRESSION_TYPES, minimumBytes: DEFAULT_COMPRESSION_MINIMUM_BYTES }
  const types = [...new Set(settings.types)].filter((t) => !NEVER_COMPRESSED_TYPES.includes(t)).sort()
  // An empty Content-Type list would match every response: no type, nothing compressed.
  if (!types.length) return null
  return {
    handler: 'encode',
    encodings: { zstd: {}, gzip: {} },
    prefer: ['zstd', 'gzip'],
    minimum_length: settings.minimumBytes,
    match: { headers: { 'Content-Type': types.map((t) => `${t}*`) } },
  }
}
