import { STREAM_DEFAULTS, streamRecord, type Stream } from '../../server/utils/streams/schemas'

// A stream as the builder sees it (docs/streams.md): the contract's defaults, then the
// test's fields, checked against the stored record's shape so a test cannot build a
// stream the panel could never hold.
export function buildStreamSnapshot(overrides: Partial<Stream> = {}): Stream {
  return streamRecord.parse({
    id: 1,
    name: 'game',
    protocol: 'tcp',
    listen_port: 25565,
    target_group_id: 1,
    ...STREAM_DEFAULTS,
    tls_sni: [],
    ...overrides,
  })
}
