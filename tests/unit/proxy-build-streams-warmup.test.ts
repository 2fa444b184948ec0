import { describe, expect, it } from 'vitest'
import { STREAM_WARMUP_MATCHER, stripBouncerWarmup } from '../../server/utils/proxy/build/crowdsec'
import { buildProxyConfig, hashProxyConfig } from '../../server/utils/proxy/build/index'
import { buildStreamGuardRoutes } from '../../server/utils/proxy/build/stream-guards'
import type { ProxySnapshot, StreamSnapshot } from '../../server/utils/proxy/build/types'
import { STREAM_DEFAULTS, streamRecord } from '../../server/utils/streams/schemas'
import { buildGroupSnapshot, buildHostSnapshot, buildSnapshot } from '../support/factories'

// The bouncer warm-up of a stream (docs/streams.md, "Fail modes"): after a push, the
// sources banned at push time are refused until the window's end while the new
// bouncer loads its decisions, as the web hosts' warm-up route does for requests.

const security = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }
const warmup = { untilMs: 1_800_000_000_000.7, sources: ['198.51.100.200', '203.0.113.0/24'] }

function stream(overrides: Partial<StreamSnapshot> = {}): StreamSnapshot {
  return streamRecord.parse({
    ...STREAM_DEFAULTS,
    id: 7,
    name: 'ssh',
    protocol: 'tcp',
    listen_port: 2222,
    target_group_id: 1,
    ...overrides,
  })
}
const withBouncer = (o: Partial<ProxySnapshot> = {}) => buildSnapshot({ modules: ['crowdsec'], security, hosts: [], ...o })
const refuseBanned = [{ handler: 'panel_refuse', stream_id: 7, reason: 'banned' }]

/** The warm-up route of a stream whose client whitelist is `wl`. */
const warmupRoute = (wl: string[] = []) => ({
  match: [{ panel_before: { until_unix_ms: 1_800_000_000_000 } }],
  handle: [
    {
      handler: 'subroute',
      routes: [
        {
          match: [{ remote_ip: { ranges: warmup.sources }, ...(wl.length ? { not: [{ remote_ip: { ranges: wl } }] } : {}) }],
          handle: refuseBanned,
        },
      ],
    },
  ],
})

describe('the warm-up route of a stream', () => {
  it('comes right before the CrowdSec guard: the time test outside, the sources banned at push time inside', () => {
    const routes = buildStreamGuardRoutes(stream(), withBouncer({ bouncerWarmup: warmup }))
    expect(routes).toEqual([warmupRoute(), { match: [{ not: [{ crowdsec: {} }] }], handle: refuseBanned }])
    expect(STREAM_WARMUP_MATCHER).toBe('panel_before')
  })

  it('follows the LAN gate and the access list, as the bouncer it stands in for does', () => {
    const routes = buildStreamGuardRoutes(stream({ lan_only: true }), withBouncer({ bouncerWarmup: warmup }))
    expect(routes.map((r) => Object.keys((r.match as object[])[0]!)[0])).toEqual(['not', 'panel_before', 'not'])
  })

  it('spares whitelisted sources, as the bouncer does', () => {
    const routes = buildStreamGuardRoutes(stream(), withBouncer({ bouncerWarmup: warmup, whitelist: ['203.0.113.9'] }))
    expect(routes[0]).toEqual(warmupRoute(['203.0.113.9']))
  })

  it('is absent when nothing was banned at push time, or the stream does not use the bouncer', () => {
    const none = buildStreamGuardRoutes(stream(), withBouncer({ bouncerWarmup: { ...warmup, sources: [] } }))
    expect(JSON.stringify(none)).not.toContain('panel_before')
    expect(buildStreamGuardRoutes(stream({ bouncer_enabled: false }), withBouncer({ bouncerWarmup: warmup }))).toEqual([])
    // No bouncer module: nothing to warm up.
    expect(buildStreamGuardRoutes(stream(), buildSnapshot({ security, bouncerWarmup: warmup }))).toEqual([])
  })
})

describe('the warm-up routes leave the identity of a configuration unchanged', () => {
  const tlsGroup = buildGroupSnapshot({ id: 2, name: 'tls', targets: [{ address: '10.0.0.9:8443', weight: 1 }] })
  const base = withBouncer({
    hosts: [buildHostSnapshot({ id: 1, domain: 'www.example.test', tls_mode: 'auto' })],
    targetGroups: [buildGroupSnapshot(), tlsGroup],
    streams: [
      stream(),
      // A one_to_one range: the guards are on every port's server.
      stream({ id: 8, name: 'range', listen_port: 3000, listen_port_end: 3002 }),
      // SNI beside the web host (the https server's listener wrapper) and on a port of its own.
      stream({ id: 9, name: 'sni', listen_port: 443, target_group_id: 2, tls_sni: ['git.example.test'] }),
      stream({ id: 10, name: 'sni-own', listen_port: 8443, target_group_id: 2, tls_sni: ['db.example.test'] }),
    ],
  })
  const plain = buildProxyConfig(base).config
  const gated = buildProxyConfig({ ...base, bouncerWarmup: warmup }).config

  it('puts a warm-up route on every stream listener and every SNI stream', () => {
    const text = JSON.stringify(gated)
    // stream 7, three ports of stream 8, the two SNI streams; none for the web host (its own is @id'd).
    expect(text.split('"panel_before"').length - 1).toBe(6)
    const wrapperSub = (gated as any).apps.http.servers.https.listener_wrappers[0].routes[0].handle[0]
    // The SNI stream beside the web host: first of the guards its route runs once its name matched.
    expect(wrapperSub.routes[0].match).toEqual(warmupRoute().match)
    expect(wrapperSub.routes[0].handle[0].routes[0].handle).toEqual([{ handler: 'panel_refuse', stream_id: 9, reason: 'banned' }])
  })

  it('hashes as the configuration without them, and stripping gives that configuration back', () => {
    expect(JSON.stringify(gated)).not.toBe(JSON.stringify(plain))
    expect(hashProxyConfig(gated)).toBe(hashProxyConfig(plain))
    const later = buildProxyConfig({ ...base, bouncerWarmup: { untilMs: warmup.untilMs + 1, sources: ['192.0.2.1'] } }).config
    expect(hashProxyConfig(later)).toBe(hashProxyConfig(plain))
    expect(stripBouncerWarmup(gated)).toEqual(plain)
    // Stripping copies, it never edits the pushed configuration; nothing to strip, the same object.
    expect(JSON.stringify(gated)).toContain('panel_before')
    expect(stripBouncerWarmup(plain)).toBe(plain)
  })
})
