import { describe, expect, it } from 'vitest'
import {
  DEFAULT_COMPRESSION_MINIMUM_BYTES,
  DEFAULT_COMPRESSION_TYPES,
  buildEncodeHandler,
  hostCompresses,
} from '../../server/utils/proxy/build/encode'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { buildLanGateRoute } from '../../server/utils/proxy/build/lan-gate'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const ON = { enabled: true, types: ['text/html', 'application/json'], minimumBytes: 256 }
const OFF = { ...ON, enabled: false }

describe('hostCompresses — the host override wins over the global setting', () => {
  it.each([
    ['inherit', ON, true],
    ['inherit', OFF, false],
    ['inherit', undefined, false],
    ['on', OFF, true],
    ['on', undefined, true],
    ['off', ON, false],
  ] as const)('host %s, global %j -> %s', (compression, global, expected) => {
    expect(hostCompresses(buildHostSnapshot({ compression }), global)).toBe(expected)
  })
})

describe('buildEncodeHandler — the handler', () => {
  it('prefers zstd then gzip, matches the listed media types with any parameter, and keeps the minimum size', () => {
    expect(buildEncodeHandler(ON)).toEqual({
      handler: 'encode',
      encodings: { zstd: {}, gzip: {} },
      prefer: ['zstd', 'gzip'],
      minimum_length: 256,
      match: { headers: { 'Content-Type': ['application/json*', 'text/html*'] } },
    })
  })

  it('never lists a streaming type, even if one reached the settings', () => {
    const handler = buildEncodeHandler({ ...ON, types: ['text/event-stream', 'application/grpc', 'text/plain', 'text/plain'] }) as any
    expect(handler.match.headers['Content-Type']).toEqual(['text/plain*'])
  })

  it('emits nothing for an empty type list (an empty Content-Type matcher would match every answer)', () => {
    expect(buildEncodeHandler({ ...ON, types: [] })).toBeNull()
    expect(buildEncodeHandler({ ...ON, types: ['text/event-stream'] })).toBeNull()
  })

  it('a host forced on without global settings gets the default list and size', () => {
    const handler = buildEncodeHandler(undefined) as any
    expect(handler.minimum_length).toBe(DEFAULT_COMPRESSION_MINIMUM_BYTES)
    expect(handler.match.headers['Content-Type']).toEqual([...DEFAULT_COMPRESSION_TYPES].sort().map((t) => `${t}*`))
    expect(DEFAULT_COMPRESSION_TYPES).not.toContain('text/event-stream')
  })
})

describe('buildEncodeHandler — in the host chain', () => {
  it('is a route of its own after the LAN gate and before the bouncer, so it wraps everything after it', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ compression: ON, hosts: [buildHostSnapshot({ lan_only: true, bouncer_enabled: true })] }),
    )
    const routes = hostSubroutes(config, 'host1.example.test')
    expect(routes[0]).toEqual(buildLanGateRoute({ trustedProxies: [], headers: ['X-Forwarded-For'] }))
    expect(routes[1]).toEqual({ handle: [buildEncodeHandler(ON)] })
    expect(JSON.stringify(routes.slice(2))).not.toContain('"encode"')
  })

  it('is absent for a host that inherits "off" and for a host turned off', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        compression: OFF,
        hosts: [buildHostSnapshot({ compression: 'inherit' }), buildHostSnapshot({ id: 2, compression: 'on' })],
      }),
    )
    expect(JSON.stringify(hostSubroutes(config, 'host1.example.test'))).not.toContain('"encode"')
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).toContain('"encode"')
    const forcedOff = buildProxyConfig(buildSnapshot({ compression: ON, hosts: [buildHostSnapshot({ compression: 'off' })] })).config
    expect(JSON.stringify(forcedOff)).not.toContain('"encode"')
  })

  it('an upgraded panel (global off, hosts inherit) pushes the same bytes as before compression existed', () => {
    const before = buildSnapshot({ hosts: [buildHostSnapshot({ waf_enabled: true }), buildHostSnapshot({ id: 2, lan_only: true })] })
    delete (before as any).compression
    const after = { ...before, compression: OFF }
    expect(stableStringify(buildProxyConfig(after).config)).toBe(stableStringify(buildProxyConfig(before).config))
  })
})
