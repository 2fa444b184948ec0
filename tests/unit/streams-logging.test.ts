import { describe, expect, it } from 'vitest'
import { buildLogging } from '../../server/utils/proxy/build/logging'
import { buildStreamConnectionLogHandler, STREAM_LOG_FILE } from '../../server/utils/proxy/build/stream-logging'
import { LOG_FILES, parseLayer4Line, type ParseContext } from '../../server/utils/logs/parse'
import { STREAM_DEFAULTS, type Stream } from '../../server/utils/streams/schemas'

// The connection rows of streams (docs/streams.md "Connection rows"): the builder's seam, the
// logging section that sends the stream handlers' lines to their own file, and the parser of them.

const stream = (over: Partial<Stream> = {}): Stream => ({
  ...STREAM_DEFAULTS,
  tls_sni: [],
  id: 12,
  name: 'minecraft',
  protocol: 'tcp',
  listen_port: 25565,
  target_group_id: 3,
  ...over,
})

describe('buildStreamConnectionLogHandler', () => {
  it('is the project handler naming the stream by id (the ingester looks the name up)', () => {
    expect(buildStreamConnectionLogHandler(stream())).toEqual({ handler: 'panel_conn_log', stream_id: 12 })
    expect(buildStreamConnectionLogHandler(stream({ id: 4, protocol: 'udp' }))).toEqual({ handler: 'panel_conn_log', stream_id: 4 })
  })
})

describe('buildLogging with streams', () => {
  it('without streams: exactly the three logs of before (existing configurations keep their bytes)', () => {
    expect(JSON.stringify(buildLogging('/l'))).toBe(JSON.stringify(buildLogging('/l', false)))
    expect(Object.keys((buildLogging('/l') as any).logs)).toEqual(['default', 'access', 'error'])
  })

  it('with streams: both stream handlers to <logDir>/layer4.log, and out of the default log', () => {
    const logs = (buildLogging('/var/log/panel', true) as any).logs
    expect(logs.layer4).toEqual({
      writer: { output: 'file', filename: '/var/log/panel/layer4.log' },
      encoder: { format: 'json' },
      include: ['layer4.handlers.panel_conn_log', 'layer4.handlers.panel_refuse'],
    })
    expect(logs.default.exclude).toEqual(expect.arrayContaining(['layer4.handlers.panel_conn_log', 'layer4.handlers.panel_refuse']))
    // The other logs are untouched.
    expect(logs.access).toEqual((buildLogging('/var/log/panel') as any).logs.access)
    expect(logs.error).toEqual((buildLogging('/var/log/panel') as any).logs.error)
  })

  it('the ingester tails that file as the layer4 source', () => {
    expect(LOG_FILES).toContainEqual({ file: STREAM_LOG_FILE, source: 'layer4' })
  })
})

const ctx: ParseContext = {
  hostIdOf: () => null,
  countryOf: (ip) => (ip.startsWith('10.') ? 'LAN' : ip === '2001:db8::7' ? 'DE' : null),
  streamNameOf: (id) => (id === 12 ? 'minecraft' : null),
}
const closed = {
  level: 'info',
  ts: 1_790_000_000.25,
  logger: 'layer4.handlers.panel_conn_log',
  msg: 'connection closed',
  stream_id: 12,
  remote: '10.0.0.9:51234',
  local: '10.0.0.1:25565',
  bytes_in: 1000,
  bytes_out: 2500,
  duration: 1.5,
  reason: 'closed',
}

describe('parseLayer4Line', () => {
  it('a closed connection: the stream (id and name), the client and its country, bytes each way, duration, reason', () => {
    const line = JSON.stringify(closed)
    expect(parseLayer4Line(line, ctx, 5)).toEqual({
      tsMs: 1_790_000_000_250,
      source: 'layer4',
      streamId: 12,
      streamName: 'minecraft',
      remoteIp: '10.0.0.9',
      country: 'LAN',
      upstream: null,
      bytesIn: 1000,
      bytesOut: 2500,
      durationMs: 1500,
      level: 'info',
      message: 'closed',
      raw: line,
    })
  })

  it("the proxy's error is the message (no upstream), an IPv6 client loses its brackets and port", () => {
    const row = parseLayer4Line(
      JSON.stringify({ ...closed, remote: '[2001:db8::7]:4000', reason: 'no upstreams available', upstream: '10.0.0.5:25565' }),
      ctx,
    )
    expect(row).toMatchObject({
      message: 'no upstreams available',
      remoteIp: '2001:db8::7',
      country: 'DE',
      upstream: '10.0.0.5:25565',
      level: 'info',
    })
  })

  it('a refusal of the refusal handler: level warn, the reason in the message, no byte counts', () => {
    const row = parseLayer4Line(
      JSON.stringify({
        level: 'info',
        ts: 1_790_000_001,
        logger: 'layer4.handlers.panel_refuse',
        msg: 'connection refused',
        stream_id: 12,
        reason: 'lan_only',
        remote: '198.51.100.4:999',
        local: '10.0.0.1:25565',
      }),
      ctx,
    )
    expect(row).toMatchObject({
      level: 'warn',
      message: 'refused: lan_only',
      streamId: 12,
      streamName: 'minecraft',
      remoteIp: '198.51.100.4',
      bytesIn: null,
      bytesOut: null,
    })
  })

  it('a stream the panel no longer knows keeps its id; odd values are dropped, never stored', () => {
    const row = parseLayer4Line(JSON.stringify({ ...closed, stream_id: 99, bytes_in: -1, bytes_out: 'x', duration: 'long' }), ctx)
    expect(row).toMatchObject({ streamId: 99, streamName: null, bytesIn: null, bytesOut: null, durationMs: null })
  })

  it('not JSON: an unparsed row with the raw line, like the other sources', () => {
    expect(parseLayer4Line('garbage', ctx, 7)).toMatchObject({ source: 'layer4', level: 'error', tsMs: 7, raw: 'garbage' })
  })
})
