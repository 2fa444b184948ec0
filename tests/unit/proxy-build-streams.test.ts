import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { buildStreamsApp, streamListenHosts } from '../../server/utils/proxy/build/streams'
import type { ProxySnapshot, TargetGroupSnapshot } from '../../server/utils/proxy/build/types'
import { buildGroupSnapshot, buildSnapshot } from '../support/factories'
import { buildStreamSnapshot } from '../support/stream-snapshot'

// The layer-4 app of streams (docs/streams.md): one server per listener, the proxy to the
// target group, ranges in both mappings, balancing, health checks and PROXY protocol.

const group = (overrides: Partial<TargetGroupSnapshot> = {}) =>
  buildGroupSnapshot({ id: 7, name: 'games', targets: [{ address: '10.0.0.5:25565', weight: 1 }], ...overrides })

function build(overrides: Partial<ProxySnapshot> = {}): { app: any; warnings: string[] } {
  const warnings: string[] = []
  const app = buildStreamsApp(buildSnapshot({ targetGroups: [group()], ...overrides }), warnings) as any
  return { app, warnings }
}

const proxyOf = (server: any) => server.routes.at(-1).handle.at(-1)

describe('buildStreamsApp — listeners', () => {
  it('a TCP stream on one port is one server listening on tcp/:P, proxying to its target', () => {
    const { app, warnings } = build({ streams: [buildStreamSnapshot({ id: 3, target_group_id: 7 })] })
    expect(warnings).toEqual([])
    expect(app).toEqual({
      servers: {
        'stream-3': {
          listen: ['tcp/:25565'],
          routes: [
            {
              handle: [
                // The connection log wraps the proxy (stream-logging.ts): one line per connection.
                { handler: 'panel_conn_log', stream_id: 3 },
                {
                  handler: 'proxy',
                  upstreams: [{ dial: ['tcp/10.0.0.5:25565'] }],
                  load_balancing: {
                    selection: { policy: 'panel_record_upstream', selection: { policy: 'round_robin' } },
                    try_duration: '2s',
                  },
                },
              ],
            },
          ],
        },
      },
    })
  })

  it('a UDP stream listens on udp/:P and dials udp/ targets, without a retry window', () => {
    const { app } = build({
      streams: [buildStreamSnapshot({ id: 4, protocol: 'udp', listen_port: 5353, target_group_id: 7 })],
      targetGroups: [group({ targets: [{ address: '10.0.0.53:53', weight: 1 }] })],
    })
    expect(app.servers['stream-4'].listen).toEqual(['udp/:5353'])
    expect(proxyOf(app.servers['stream-4'])).toEqual({
      handler: 'proxy',
      upstreams: [{ dial: ['udp/10.0.0.53:53'] }],
      load_balancing: { selection: { policy: 'panel_record_upstream', selection: { policy: 'round_robin' } } },
    })
  })

  it('listens on the host part of the proxy listeners when they name one, on every address otherwise', () => {
    expect(streamListenHosts({ httpListen: [':80'], httpsListen: [':443'] })).toEqual([''])
    expect(streamListenHosts({ httpListen: ['127.0.0.1:8080', '[::1]:8080'], httpsListen: ['127.0.0.1:8443'] })).toEqual([
      '127.0.0.1',
      '[::1]',
    ])
    expect(streamListenHosts({ httpListen: ['127.0.0.1:8080'], httpsListen: [':8443'] })).toEqual([''])
    expect(streamListenHosts({ httpListen: ['0.0.0.0:80'], httpsListen: ['10.1.1.1:443'] })).toEqual([''])
    const { app } = build({
      httpListen: ['127.0.0.1:8080', '[::1]:8080'],
      httpsListen: ['127.0.0.1:8443'],
      streams: [buildStreamSnapshot({ id: 1, target_group_id: 7, listen_port: 2222 })],
    })
    expect(app.servers['stream-1'].listen).toEqual(['tcp/127.0.0.1:2222', 'tcp/[::1]:2222'])
  })

  it('an all_to_one range is one server listening on the range, every port to the target port', () => {
    const { app } = build({
      streams: [
        buildStreamSnapshot({ id: 2, listen_port: 27000, listen_port_end: 27010, range_mapping: 'all_to_one', target_group_id: 7 }),
      ],
    })
    expect(Object.keys(app.servers)).toEqual(['stream-2'])
    expect(app.servers['stream-2'].listen).toEqual(['tcp/:27000-27010'])
    expect(proxyOf(app.servers['stream-2']).upstreams).toEqual([{ dial: ['tcp/10.0.0.5:25565'] }])
  })

  it('a one_to_one range is one server per port, each to every target port plus its offset', () => {
    const { app, warnings } = build({
      streams: [buildStreamSnapshot({ id: 2, protocol: 'udp', listen_port: 27000, listen_port_end: 27002, target_group_id: 7 })],
      targetGroups: [
        group({
          targets: [
            { address: '10.0.0.5:30000', weight: 1 },
            { address: '[fd00::5]:31000', weight: 1 },
          ],
        }),
      ],
    })
    expect(warnings).toEqual([])
    expect(Object.keys(app.servers)).toEqual(['stream-2-27000', 'stream-2-27001', 'stream-2-27002'])
    expect(app.servers['stream-2-27001'].listen).toEqual(['udp/:27001'])
    expect(Object.values(app.servers).map((s: any) => proxyOf(s).upstreams)).toEqual([
      [{ dial: ['udp/10.0.0.5:30000'] }, { dial: ['udp/[fd00::5]:31000'] }],
      [{ dial: ['udp/10.0.0.5:30001'] }, { dial: ['udp/[fd00::5]:31001'] }],
      [{ dial: ['udp/10.0.0.5:30002'] }, { dial: ['udp/[fd00::5]:31002'] }],
    ])
  })

  it('a one_to_one range whose target ports would pass 65535 opens only the ports that map, with a warning', () => {
    const { app, warnings } = build({
      streams: [buildStreamSnapshot({ id: 2, name: 'tail', listen_port: 5000, listen_port_end: 5004, target_group_id: 7 })],
      targetGroups: [group({ targets: [{ address: '10.0.0.5:65533', weight: 1 }] })],
    })
    expect(Object.keys(app.servers)).toEqual(['stream-2-5000', 'stream-2-5001', 'stream-2-5002'])
    expect(warnings).toEqual([
      "stream tail: ports 5003-5004 map past target port 65535 (one_to_one adds each port's offset to the target's port); they open no listener",
    ])
  })
})

describe('buildStreamsApp — what emits nothing', () => {
  it('no stream, no layer4 app: a configuration without streams keeps its bytes', () => {
    const withoutKey = buildSnapshot()
    delete (withoutKey as Partial<ProxySnapshot>).streams
    const a = buildProxyConfig(withoutKey)
    const b = buildProxyConfig(buildSnapshot({ streams: [] }))
    const c = buildProxyConfig(buildSnapshot({ streams: [buildStreamSnapshot({ enabled: false })] }))
    expect((a.config.apps as any).layer4).toBeUndefined()
    expect(stableStringify(b.config)).toBe(stableStringify(a.config))
    expect(stableStringify(c.config)).toBe(stableStringify(a.config))
  })

  it('a disabled stream opens no listener beside an enabled one', () => {
    const { app } = build({
      streams: [
        buildStreamSnapshot({ id: 1, name: 'off', enabled: false, target_group_id: 7 }),
        buildStreamSnapshot({ id: 2, name: 'on', listen_port: 2222, target_group_id: 7 }),
      ],
    })
    expect(Object.keys(app.servers)).toEqual(['stream-2'])
  })

  it('an SNI stream gets no listener of its own here (it is matched on a shared port)', () => {
    const { app } = build({ streams: [buildStreamSnapshot({ id: 1, listen_port: 443, tls_sni: ['db.example.test'], target_group_id: 7 })] })
    expect(app).toBeNull()
  })

  it('a stream whose target group is missing opens nothing and says so', () => {
    const { app, warnings } = build({ streams: [buildStreamSnapshot({ id: 1, name: 'orphan', target_group_id: 99 })] })
    expect(app).toBeNull()
    expect(warnings).toEqual(['stream orphan: its target group 99 does not exist; the stream opens no port'])
  })

  it('buildProxyConfig puts the app under apps.layer4', () => {
    const { config } = buildProxyConfig(buildSnapshot({ targetGroups: [group()], streams: [buildStreamSnapshot({ target_group_id: 7 })] }))
    expect(Object.keys((config.apps as any).layer4.servers)).toEqual(['stream-1'])
  })
})

describe('buildStreamsApp — balancing and health', () => {
  it.each(['round_robin', 'least_conn', 'random', 'first', 'ip_hash'] as const)(
    '%s maps to the layer-4 policy of the same name',
    (policy) => {
      const { app } = build({ streams: [buildStreamSnapshot({ target_group_id: 7 })], targetGroups: [group({ lb_policy: policy })] })
      const proxy = proxyOf(app.servers['stream-1'])
      expect(proxy.load_balancing.selection).toEqual({ policy: 'panel_record_upstream', selection: { policy } })
      expect(proxy.upstreams.every((u: any) => u.weight === undefined)).toBe(true)
    },
  )

  it('weighted_round_robin carries each target weight on its upstream, with no warning (caddy-l4 has it)', () => {
    const { app, warnings } = build({
      streams: [buildStreamSnapshot({ target_group_id: 7 })],
      targetGroups: [
        group({
          lb_policy: 'weighted_round_robin',
          targets: [
            { address: '10.0.0.1:22', weight: 3 },
            { address: '10.0.0.2:22', weight: 1 },
          ],
        }),
      ],
    })
    expect(warnings).toEqual([])
    const proxy = proxyOf(app.servers['stream-1'])
    expect(proxy.load_balancing.selection).toEqual({ policy: 'panel_record_upstream', selection: { policy: 'weighted_round_robin' } })
    expect(proxy.upstreams).toEqual([
      { dial: ['tcp/10.0.0.1:22'], weight: 3 },
      { dial: ['tcp/10.0.0.2:22'], weight: 1 },
    ])
  })

  it("a TCP stream checks each target by connecting at the group's interval, and passively", () => {
    const { app } = build({
      streams: [buildStreamSnapshot({ target_group_id: 7 })],
      targetGroups: [group({ health_check: { path: '/healthz', interval_seconds: 15, expect_status: 204 } })],
    })
    expect(proxyOf(app.servers['stream-1']).health_checks).toEqual({
      active: { interval: '15s' },
      passive: { fail_duration: '30s', max_fails: 1 },
    })
  })

  it('a UDP stream has no proxy health check (the panel probes UDP targets itself)', () => {
    const { app } = build({
      streams: [buildStreamSnapshot({ protocol: 'udp', target_group_id: 7 })],
      targetGroups: [group({ health_check: { path: '/healthz', interval_seconds: 15, expect_status: 200 } })],
    })
    expect(proxyOf(app.servers['stream-1']).health_checks).toBeUndefined()
  })
})

describe('buildStreamsApp — PROXY protocol', () => {
  it.each([
    ['tcp', 'v1'],
    ['tcp', 'v2'],
    ['udp', 'v2'],
  ] as const)('a %s stream with %s sends that header to the upstream', (protocol, version) => {
    const { app, warnings } = build({ streams: [buildStreamSnapshot({ protocol, proxy_protocol: version, target_group_id: 7 })] })
    expect(proxyOf(app.servers['stream-1']).proxy_protocol).toBe(version)
    expect(warnings).toEqual([])
  })

  it('off sends none', () => {
    const { app } = build({ streams: [buildStreamSnapshot({ target_group_id: 7 })] })
    expect(proxyOf(app.servers['stream-1'])).not.toHaveProperty('proxy_protocol')
  })

  it('v1 on a UDP stream sends none and says why (v1 has no UDP form)', () => {
    const { app, warnings } = build({
      streams: [buildStreamSnapshot({ name: 'dns', protocol: 'udp', proxy_protocol: 'v1', target_group_id: 7 })],
    })
    expect(proxyOf(app.servers['stream-1'])).not.toHaveProperty('proxy_protocol')
    expect(warnings).toEqual(['stream dns: PROXY protocol v1 has no form for UDP; no header is sent (choose v2 for a UDP stream)'])
  })

  it('accepting a header reads it first, only from the trusted proxies (single addresses as ranges)', () => {
    const { app, warnings } = build({
      clientIp: { trustedProxies: ['10.9.0.0/16', '192.168.1.4', 'fd00::1'], headers: ['X-Forwarded-For'] },
      streams: [buildStreamSnapshot({ accept_proxy_protocol: true, proxy_protocol: 'v2', target_group_id: 7 })],
    })
    expect(warnings).toEqual([])
    const routes = app.servers['stream-1'].routes
    expect(routes[0]).toEqual({
      handle: [
        { handler: 'proxy_protocol', allow: ['10.9.0.0/16', '192.168.1.4/32', 'fd00::1/128'], fallback_policy: 'REJECT', timeout: '5s' },
      ],
    })
    expect(routes).toHaveLength(2)
    expect(proxyOf(app.servers['stream-1']).proxy_protocol).toBe('v2')
  })

  it('accepting a header with no trusted proxy reads none and tells the operator where to add one', () => {
    const { app, warnings } = build({ streams: [buildStreamSnapshot({ name: 'ssh', accept_proxy_protocol: true, target_group_id: 7 })] })
    expect(app.servers['stream-1'].routes).toHaveLength(1)
    expect(warnings).toEqual([
      'stream ssh: accepts a PROXY protocol header, but the setting proxy.trusted_proxies is empty, so no header is believed; add the proxy in front of this one there',
    ])
  })

  it('a UDP stream reads no header, with a warning', () => {
    const { app, warnings } = build({
      clientIp: { trustedProxies: ['10.9.0.0/16'], headers: ['X-Forwarded-For'] },
      streams: [buildStreamSnapshot({ name: 'dns', protocol: 'udp', accept_proxy_protocol: true, target_group_id: 7 })],
    })
    expect(app.servers['stream-1'].routes).toHaveLength(1)
    expect(warnings).toEqual(['stream dns: a PROXY protocol header is only read on TCP streams; its UDP datagrams are taken as they come'])
  })
})

describe('buildStreamsApp — determinism', () => {
  it('equal snapshots in any order give equal bytes, servers in stream id order', () => {
    const streams = [
      buildStreamSnapshot({ id: 9, name: 'b', listen_port: 3000, listen_port_end: 3001, target_group_id: 7 }),
      buildStreamSnapshot({ id: 2, name: 'a', protocol: 'udp', listen_port: 4000, target_group_id: 8 }),
    ]
    const groups = [group(), group({ id: 8, name: 'dns', targets: [{ address: '10.0.0.53:53', weight: 1 }] })]
    const one = buildProxyConfig(buildSnapshot({ targetGroups: groups, streams }))
    const two = buildProxyConfig(buildSnapshot({ targetGroups: [...groups].reverse(), streams: [...streams].reverse() }))
    expect(stableStringify(two.config)).toBe(stableStringify(one.config))
    expect(Object.keys((one.config.apps as any).layer4.servers)).toEqual(['stream-2', 'stream-9-3000', 'stream-9-3001'])
  })
})
