import { describe, expect, it } from 'vitest'
import { buildGroupSnapshot, buildHostSnapshot, buildSnapshot } from '../support/factories'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { STREAM_DEFAULTS, type Stream } from '../../server/utils/streams/schemas'

// SNI routing of TCP streams (docs/streams.md, "SNI routing"): where the routes go
// (the https server's listener wrapper, or a layer-4 server of their own), their
// order, and that nothing changes for a configuration without SNI streams.

function sniStream(overrides: Partial<Stream> = {}): Stream {
  return {
    ...STREAM_DEFAULTS,
    id: 1,
    name: 'sni',
    protocol: 'tcp',
    listen_port: 443,
    target_group_id: 2,
    tls_sni: ['git.example.test'],
    ...overrides,
  }
}

const streamGroup = buildGroupSnapshot({ id: 2, name: 'tls-upstream', targets: [{ address: '10.0.0.9:8443', weight: 1 }] })
const tlsHost = buildHostSnapshot({ id: 1, domain: 'www.example.test', tls_mode: 'auto' })

function build(streams: Stream[], hosts = [tlsHost]) {
  const { config, warnings } = buildProxyConfig(buildSnapshot({ hosts, targetGroups: [buildGroupSnapshot(), streamGroup], streams }))
  return { config: config as any, warnings }
}

const wrapperRoutes = (config: any) => config.apps.http.servers.https.listener_wrappers[0].routes

describe('SNI streams on the HTTPS port beside a TLS web host', () => {
  it('puts a layer-4 listener wrapper before the tls wrapper of the https server', () => {
    const { config } = build([sniStream()])
    const wrappers = config.apps.http.servers.https.listener_wrappers
    expect(wrappers.map((w: any) => w.wrapper)).toEqual(['layer4', 'tls'])
    expect(wrapperRoutes(config)).toHaveLength(1)
    expect(wrapperRoutes(config)[0].match).toEqual([{ tls: { sni: ['git.example.test'] } }])
    // No layer-4 server may bind the port the HTTP app holds.
    expect(config.apps.layer4).toBeUndefined()
  })

  it('proxies the matched connection to the target group without terminating TLS', () => {
    const { config } = build([sniStream({ proxy_protocol: 'v2' })])
    const sub = wrapperRoutes(config)[0].handle[0]
    expect(sub.handler).toBe('subroute')
    const proxy = sub.routes.at(-1).handle.at(-1)
    expect(proxy).toMatchObject({ handler: 'proxy', upstreams: [{ dial: ['tcp/10.0.0.9:8443'] }], proxy_protocol: 'v2' })
    expect(JSON.stringify(wrapperRoutes(config))).not.toContain('"handler":"tls"')
  })

  it('configures the layer-4 log for the connection rows, though no layer-4 app exists', () => {
    const { config } = build([sniStream()])
    expect(config.logging.logs.layer4).toBeDefined()
    expect(build([]).config.logging.logs.layer4).toBeUndefined()
  })

  it('lets every other name fall through to the web host: no catch-all route, the host route unchanged', () => {
    const { config } = build([sniStream()])
    expect(wrapperRoutes(config).every((r: any) => r.match?.[0]?.tls?.sni?.length)).toBe(true)
    const hostRoute = config.apps.http.servers.https.routes.find((r: any) => r.match?.[0]?.host?.includes('www.example.test'))
    expect(hostRoute).toBeDefined()
  })

  it('orders exact names before wildcards, and a wildcard spares the web hosts it would cover', () => {
    const { config } = build([
      sniStream({ id: 1, name: 'all', tls_sni: ['*.example.test'] }),
      sniStream({ id: 2, name: 'one', tls_sni: ['db.example.test'] }),
    ])
    const routes = wrapperRoutes(config)
    expect(routes.map((r: any) => r.match[0].tls.sni)).toEqual([['db.example.test'], ['*.example.test']])
    expect(routes[1].match[0].not).toEqual([{ tls: { sni: ['www.example.test'] } }])
  })

  it('a disabled stream, a UDP stream or a stream without names adds nothing', () => {
    const { config } = build([
      sniStream({ enabled: false }),
      sniStream({ id: 2, name: 'plain', tls_sni: [], listen_port: 2222 }),
      // The body schema refuses names on a UDP stream; the builder never routes one by SNI either.
      sniStream({ id: 3, name: 'dns', protocol: 'udp', listen_port: 443 }),
    ])
    expect(config.apps.http.servers.https.listener_wrappers).toBeUndefined()
  })
})

describe('SNI streams with no https server, or on another port', () => {
  it('without a TLS web host, the HTTPS port becomes a layer-4 server of its own', () => {
    const { config } = build([sniStream()], [buildHostSnapshot({ id: 1, tls_mode: 'none' })])
    expect(config.apps.http.servers.https).toBeUndefined()
    const server = config.apps.layer4.servers['sni-443']
    expect(server.listen).toEqual(['tcp/:443'])
    expect(server.routes[0].match).toEqual([{ tls: { sni: ['git.example.test'] } }])
  })

  it('several streams share a non-HTTPS port in one server, one route each', () => {
    const { config } = build([
      sniStream({ id: 1, name: 'a', listen_port: 8883, tls_sni: ['mqtt-a.example.test'] }),
      sniStream({ id: 2, name: 'b', listen_port: 8883, tls_sni: ['mqtt-b.example.test', '*.iot.example.test'] }),
    ])
    expect(config.apps.http.servers.https.listener_wrappers).toBeUndefined()
    const server = config.apps.layer4.servers['sni-8883']
    expect(server.listen).toEqual(['tcp/:8883'])
    expect(server.routes.map((r: any) => r.match[0].tls.sni)).toEqual([
      ['mqtt-a.example.test'],
      ['mqtt-b.example.test'],
      ['*.iot.example.test'],
    ])
    // No web host lives on this port: a wildcard spares nothing.
    expect(server.routes[2].match[0].not).toBeUndefined()
  })

  it('a port of its own reads a PROXY protocol header from trusted proxies before the ClientHello', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        hosts: [tlsHost],
        targetGroups: [buildGroupSnapshot(), streamGroup],
        clientIp: { trustedProxies: ['10.1.0.0/16'], headers: ['X-Forwarded-For'] },
        streams: [sniStream({ listen_port: 8883, accept_proxy_protocol: true })],
      }),
    ) as { config: any }
    const routes = config.apps.layer4.servers['sni-8883'].routes
    expect(routes[0]).toEqual({ handle: [expect.objectContaining({ handler: 'proxy_protocol', allow: ['10.1.0.0/16'] })] })
    expect(routes[1].match).toEqual([{ tls: { sni: ['git.example.test'] } }])
  })

  it('on the HTTPS port shared with web hosts, a PROXY protocol header is not read, and a warning says so', () => {
    const { config, warnings } = build([sniStream({ accept_proxy_protocol: true })])
    expect(JSON.stringify(config.apps.http.servers.https.listener_wrappers)).not.toContain('proxy_protocol')
    expect(warnings.join('\n')).toContain('stream sni: a PROXY protocol header is not read on the HTTPS port')
  })

  it('warns and builds nothing for a stream whose target group is gone', () => {
    const { config, warnings } = build([sniStream({ target_group_id: 99, listen_port: 8883 })])
    expect(config.apps.layer4).toBeUndefined()
    expect(warnings.join('\n')).toContain('stream sni: its target group no longer exists')
  })
})

describe('no SNI stream', () => {
  it('leaves the configuration byte for byte as without streams', () => {
    const without = buildProxyConfig(buildSnapshot({ hosts: [tlsHost] })).config
    const empty = buildProxyConfig(buildSnapshot({ hosts: [tlsHost], streams: [] })).config
    expect(stableStringify(empty)).toBe(stableStringify(without))
    expect(stableStringify(without)).not.toContain('listener_wrappers')
  })
})
