import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { LAN_RANGES } from '../../server/utils/proxy/build/lan-gate'
import {
  buildStreamGuardRoutes,
  streamFailsClosed,
  streamsUseBouncer,
  type StreamRefuseReason,
} from '../../server/utils/proxy/build/stream-guards'
import type { ProxySnapshot, StreamSnapshot } from '../../server/utils/proxy/build/types'
import { STREAM_DEFAULTS, streamRecord } from '../../server/utils/streams/schemas'
import { buildAccessListSnapshot, buildHostSnapshot, buildSnapshot } from '../support/factories'

// A stream's guards (docs/streams.md, "The chain of a connection"): the layer-4
// routes before its proxy route, each refusing through panel_refuse with its reason.

const security = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }

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
/** A proxy with the bouncer and its key: a stream's default bouncer_enabled then applies. */
const withBouncer = (o: Partial<ProxySnapshot> = {}) => buildSnapshot({ modules: ['crowdsec'], security, hosts: [], ...o })
const refuse = (reason: StreamRefuseReason) => [{ handler: 'panel_refuse', stream_id: 7, reason }]
const reasons = (routes: Array<Record<string, unknown>>) => routes.map((r) => (r.handle as Array<{ reason: string }>)[0]!.reason)

describe('a stream with nothing on', () => {
  it('has no guard route (the proxy route alone)', () => {
    expect(buildStreamGuardRoutes(stream({ bouncer_enabled: false }), buildSnapshot())).toEqual([])
  })

  it('has no bouncer route when the proxy has no bouncer module or no key, even with bouncer_enabled', () => {
    expect(buildStreamGuardRoutes(stream(), buildSnapshot({ security }))).toEqual([])
    expect(buildStreamGuardRoutes(stream(), buildSnapshot({ modules: ['crowdsec'] }))).toEqual([])
  })

  it('the engine down changes nothing for a stream that does not use the bouncer and fails open', () => {
    const s = stream({ bouncer_enabled: false })
    expect(buildStreamGuardRoutes(s, withBouncer({ engineDown: { knownBanned: ['198.51.100.200'] } }))).toEqual([])
  })
})

describe('LAN-only', () => {
  it('refuses a source outside the LAN ranges of the web hosts’ gate, by the connection’s address', () => {
    expect(buildStreamGuardRoutes(stream({ lan_only: true, bouncer_enabled: false }), buildSnapshot())).toEqual([
      { match: [{ not: [{ remote_ip: { ranges: LAN_RANGES } }] }], handle: refuse('lan_only') },
    ])
  })

  it('stays remote_ip with trusted proxies: no client-address header exists at layer 4', () => {
    const snap = buildSnapshot({ clientIp: { trustedProxies: ['10.0.0.0/8'], headers: ['X-Forwarded-For'] } })
    const [route] = buildStreamGuardRoutes(stream({ lan_only: true, bouncer_enabled: false }), snap)
    expect(JSON.stringify(route)).not.toContain('client_ip')
  })
})

describe('access-list IP rules', () => {
  const list = buildAccessListSnapshot({
    id: 3,
    default_action: 'deny',
    ip_rules: [
      { action: 'deny', source: '198.51.100.66' },
      { action: 'allow', source: '198.51.100.0/24' },
      { action: 'deny', source: '10.0.0.0/8' },
    ],
    users: [{ username: 'alice', hash: '$2b$10$abcdefghijklmnopqrstuv' }],
    host_ids: [],
  })

  it('first match wins, then the default; basic-auth users do not apply', () => {
    const routes = buildStreamGuardRoutes(stream({ access_list_id: 3, bouncer_enabled: false }), buildSnapshot({ accessLists: [list] }))
    expect(routes).toEqual([
      { match: [{ remote_ip: { ranges: ['198.51.100.66'] } }], handle: refuse('access_list') },
      {
        match: [{ remote_ip: { ranges: ['10.0.0.0/8'] }, not: [{ remote_ip: { ranges: ['198.51.100.0/24'] } }] }],
        handle: refuse('access_list'),
      },
      { match: [{ not: [{ remote_ip: { ranges: ['198.51.100.0/24'] } }] }], handle: refuse('access_list') },
    ])
    expect(JSON.stringify(routes)).not.toMatch(/alice|authentication|static_response|terminal/)
  })

  it('a deny default without rules refuses every connection; an allow default without rules adds nothing', () => {
    const deny = buildAccessListSnapshot({ id: 3, default_action: 'deny', host_ids: [] })
    expect(buildStreamGuardRoutes(stream({ access_list_id: 3, bouncer_enabled: false }), buildSnapshot({ accessLists: [deny] }))).toEqual([
      { handle: refuse('access_list') },
    ])
    const allow = buildAccessListSnapshot({ id: 3, default_action: 'allow', host_ids: [] })
    expect(buildStreamGuardRoutes(stream({ access_list_id: 3, bouncer_enabled: false }), buildSnapshot({ accessLists: [allow] }))).toEqual(
      [],
    )
  })

  it('a list the stream does not name is not applied', () => {
    expect(
      buildStreamGuardRoutes(stream({ access_list_id: null, bouncer_enabled: false }), buildSnapshot({ accessLists: [list] })),
    ).toEqual([])
  })
})

describe('CrowdSec', () => {
  it('refuses what the bouncer does not allow, as banned', () => {
    expect(buildStreamGuardRoutes(stream(), withBouncer())).toEqual([{ match: [{ not: [{ crowdsec: {} }] }], handle: refuse('banned') }])
  })

  it('a whitelisted source is never judged: tried first in the same not', () => {
    expect(buildStreamGuardRoutes(stream(), withBouncer({ whitelist: ['198.51.100.20', '10.1.0.0/16'] }))).toEqual([
      {
        match: [{ not: [{ remote_ip: { ranges: ['198.51.100.20', '10.1.0.0/16'] } }, { crowdsec: {} }] }],
        handle: refuse('banned'),
      },
    ])
  })
})

describe('the engine unreachable (snapshot.engineDown)', () => {
  const engineDown = { knownBanned: ['198.51.100.200', '198.51.100.192/28'] }

  it('fails open: the bans last known are refused (whitelist excepted), then the bouncer as usual', () => {
    const routes = buildStreamGuardRoutes(stream(), withBouncer({ engineDown, whitelist: ['198.51.100.193'] }))
    expect(routes).toEqual([
      {
        match: [{ remote_ip: { ranges: engineDown.knownBanned }, not: [{ remote_ip: { ranges: ['198.51.100.193'] } }] }],
        handle: refuse('banned'),
      },
      { match: [{ not: [{ remote_ip: { ranges: ['198.51.100.193'] } }, { crowdsec: {} }] }], handle: refuse('banned') },
    ])
  })

  it('fails open with no known ban: only the bouncer', () => {
    expect(reasons(buildStreamGuardRoutes(stream(), withBouncer({ engineDown: { knownBanned: [] } })))).toEqual(['banned'])
  })

  it('fails closed (engine_down_refuse): every connection refused, whitelisted ones too, as for a host', () => {
    const routes = buildStreamGuardRoutes(stream({ engine_down_refuse: true }), withBouncer({ engineDown, whitelist: ['198.51.100.193'] }))
    expect(routes[0]).toEqual({ handle: refuse('engine_down') })
  })

  it('engine_down_refuse with the engine up adds nothing', () => {
    expect(reasons(buildStreamGuardRoutes(stream({ engine_down_refuse: true }), withBouncer()))).toEqual(['banned'])
  })
})

describe('the chain order', () => {
  it('LAN-only, access list, engine down, CrowdSec', () => {
    const list = buildAccessListSnapshot({ id: 3, ip_rules: [{ action: 'deny', source: '198.51.100.66' }], host_ids: [] })
    const s = stream({ lan_only: true, access_list_id: 3 })
    const snap = withBouncer({ accessLists: [list], engineDown: { knownBanned: ['198.51.100.200'] } })
    expect(reasons(buildStreamGuardRoutes(s, snap))).toEqual(['lan_only', 'access_list', 'banned', 'banned'])
    expect(reasons(buildStreamGuardRoutes({ ...s, engine_down_refuse: true }, snap))).toEqual([
      'lan_only',
      'access_list',
      'engine_down',
      'banned',
    ])
  })
})

describe('the crowdsec app and the fail mode', () => {
  it('exists when an enabled stream uses the bouncer, even with no web host using it', () => {
    const snap = withBouncer({ streams: [stream()] })
    expect(streamsUseBouncer(snap)).toBe(true)
    const { config } = buildProxyConfig(snap)
    expect((config.apps as Record<string, unknown>).crowdsec).toMatchObject({ api_key: 'bouncer-key', enable_streaming: true })
  })

  it('does not exist for a disabled stream, or one without the bouncer (the configuration of before)', () => {
    for (const s of [stream({ enabled: false }), stream({ bouncer_enabled: false })]) {
      const snap = withBouncer({ streams: [s] })
      expect(streamsUseBouncer(snap)).toBe(false)
      expect(buildProxyConfig(snap).config.apps).not.toHaveProperty('crowdsec')
      expect(buildProxyConfig(snap)).toEqual(buildProxyConfig(withBouncer()))
    }
  })

  it('a web host using the bouncer keeps the app as before', () => {
    const snap = withBouncer({ hosts: [buildHostSnapshot()] })
    expect(buildProxyConfig({ ...snap, streams: [stream({ bouncer_enabled: false })] })).toEqual(buildProxyConfig(snap))
  })

  it('a stream that fails closed makes the reconciler push the engine-down configuration, like such a host', () => {
    expect(streamFailsClosed(withBouncer(), stream({ engine_down_refuse: true }))).toBe(true)
    expect(streamFailsClosed(withBouncer(), stream({ engine_down_refuse: true, enabled: false }))).toBe(false)
    expect(streamFailsClosed(withBouncer(), stream({ engine_down_refuse: true, bouncer_enabled: false }))).toBe(false)
    expect(streamFailsClosed(withBouncer(), stream())).toBe(false)
  })
})
