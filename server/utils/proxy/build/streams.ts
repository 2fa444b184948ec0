import { isIP } from 'node:net'
import { buildStreamGuardRoutes } from './stream-guards'
import { buildStreamConnectionLogHandler, STREAM_UPSTREAM_POLICY } from './stream-logging'
import type { Json, ProxySnapshot, Route, StreamSnapshot, TargetGroupSnapshot } from './types'

// The `layer4` app of the proxy configuration: one server per stream listener
// (docs/streams.md). Each server's routes are the PROXY protocol header read (when
// accepted), the stream's guards (stream-guards.ts, in the chain order of
// docs/streams.md), then the proxy to its target group, after the connection log
// handler (stream-logging.ts).

/**
 * How long a trusted proxy has to send its PROXY protocol header. Without a bound, a
 * trusted peer that opens a connection and sends nothing holds it forever.
 */
const ACCEPT_PROXY_PROTOCOL_TIMEOUT = '5s'

/** The layer-4 app, or null when no enabled stream needs one (nothing emitted: existing configurations keep their bytes). */
export function buildStreamsApp(snapshot: ProxySnapshot, warnings: string[]): Json | null {
  const groups = new Map(snapshot.targetGroups.map((g) => [g.id, g]))
  const hosts = streamListenHosts(snapshot)
  const servers: Json = {}
  for (const stream of [...(snapshot.streams ?? [])].filter((s) => s.enabled).sort((a, b) => a.id - b.id)) {
    // SNI streams share a port with other listeners (the HTTPS one beside the web
    // hosts): they are matched by the ClientHello, not given a listener of their own.
    if (stream.tls_sni.length) continue
    const group = groups.get(stream.target_group_id)
    if (!group) {
      warnings.push(`stream ${stream.name}: its target group ${stream.target_group_id} does not exist; the stream opens no port`)
      continue
    }
    Object.assign(servers, buildStreamServers(stream, group, hosts, snapshot, warnings))
  }
  return Object.keys(servers).length ? { servers } : null
}

/**
 * The addresses a stream listens on: the host parts of the proxy's HTTP and HTTPS
 * listeners, so a proxy told to listen on one address does not open streams on every
 * other. '' (every address) when either listener has no host part.
 */
export function streamListenHosts(snapshot: Pick<ProxySnapshot, 'httpListen' | 'httpsListen'>): string[] {
  const hosts: string[] = []
  for (const listen of [...snapshot.httpListen, ...snapshot.httpsListen]) {
    // The listen value may carry a network ('tcp/1.2.3.4:80'); its host is what precedes the port.
    const address = listen.replace(/^[a-z0-9]+\//, '')
    const host = address.slice(0, Math.max(0, address.lastIndexOf(':')))
    if (host === '' || host === '0.0.0.0' || host === '[::]') return ['']
    if (!hosts.includes(host)) hosts.push(host)
  }
  return hosts.length ? hosts : ['']
}

/**
 * The servers of one stream, by name. A single port or an `all_to_one` range is one
 * server (a range listens as `tcp/:P1-P2`, which caddy-l4 opens port by port). A
 * `one_to_one` range is one server per port: the proxy's dial address can hold a
 * placeholder but no arithmetic, and caddy-l4 v0.1.2 has no placeholder nor matcher for
 * the local port, so `target port + offset` is written into each port's own proxy. That
 * also gives each port its own health checks, which is right: every port is a different
 * upstream service.
 */
export function buildStreamServers(
  stream: StreamSnapshot,
  group: TargetGroupSnapshot,
  hosts: string[],
  snapshot: ProxySnapshot,
  warnings: string[],
): Record<string, Json> {
  const end = stream.listen_port_end ?? stream.listen_port
  const servers: Record<string, Json> = {}
  if (end === stream.listen_port || stream.range_mapping === 'all_to_one') {
    const ports = end === stream.listen_port ? `${stream.listen_port}` : `${stream.listen_port}-${end}`
    servers[`stream-${stream.id}`] = {
      listen: hosts.map((h) => `${stream.protocol}/${h}:${ports}`),
      routes: buildStreamRoutes(stream, group, 0, snapshot, warnings),
    }
    return servers
  }
  const highestTarget = Math.max(...group.targets.map((t) => _splitAddress(t.address).port))
  for (let port = stream.listen_port; port <= end; port++) {
    const offset = port - stream.listen_port
    if (highestTarget + offset > 65535) {
      warnings.push(
        `stream ${stream.name}: ports ${port}-${end} map past target port 65535 (one_to_one adds each port's offset to the target's port); they open no listener`,
      )
      break
    }
    servers[`stream-${stream.id}-${port}`] = {
      listen: hosts.map((h) => `${stream.protocol}/${h}:${port}`),
      routes: buildStreamRoutes(stream, group, offset, snapshot, warnings),
    }
  }
  return servers
}

/**
 * A stream listener's routes in the chain order of docs/streams.md: the PROXY protocol
 * header read from trusted proxies (so every later step judges the client it names),
 * the guards, then the log handler and the proxy. `portOffset` is added to each
 * target's port (a `one_to_one` range).
 */
export function buildStreamRoutes(
  stream: StreamSnapshot,
  group: TargetGroupSnapshot,
  portOffset: number,
  snapshot: ProxySnapshot,
  warnings: string[],
): Route[] {
  const routes: Route[] = []
  const accept = buildAcceptProxyProtocolHandler(stream, snapshot.clientIp.trustedProxies, warnings)
  if (accept) routes.push({ handle: [accept] })
  routes.push(...buildStreamGuardRoutes(stream, snapshot))
  const log = buildStreamConnectionLogHandler(stream)
  routes.push({ handle: [...(log ? [log] : []), buildStreamProxyHandler(stream, group, warnings, portOffset)] })
  return routes
}

/**
 * `layer4.handlers.proxy` to the target group: one upstream per target (its port plus
 * `portOffset`), the group's balancing policy, and for TCP an active health check that
 * connects to each target at the group's interval (its HTTP path and status do not
 * apply at layer 4). UDP has no connection to check: the panel probes UDP targets
 * itself (`udp_probe_hex`).
 */
export function buildStreamProxyHandler(stream: StreamSnapshot, group: TargetGroupSnapshot, warnings: string[], portOffset = 0): Json {
  const weighted = group.lb_policy === 'weighted_round_robin'
  const upstreams = group.targets.map((t) => {
    const { host, port } = _splitAddress(t.address)
    return { dial: [`${stream.protocol}/${host}:${port + portOffset}`], ...(weighted ? { weight: t.weight } : {}) }
  })
  const handler: Json = {
    handler: 'proxy',
    upstreams,
    load_balancing: {
      // The group's policy chooses; the project's wrapper notes its choice on the connection
      // so the connection's log line names the upstream (streamext/upstream.go; caddy-l4
      // names it only in a debug line).
      selection: { policy: STREAM_UPSTREAM_POLICY, selection: { policy: group.lb_policy } },
      // A target that refuses the connection is tried again on another for up to 2 s
      // (as the web hosts' upstreams are), so a target going down costs clients little
      // before its health check notices.
      ...(stream.protocol === 'tcp' ? { try_duration: '2s' } : {}),
    },
  }
  if (group.health_check && stream.protocol === 'tcp') {
    handler.health_checks = {
      active: { interval: `${group.health_check.interval_seconds}s` },
      passive: { fail_duration: '30s', max_fails: 1 },
    }
  }
  if (stream.proxy_protocol === 'v2' || (stream.proxy_protocol === 'v1' && stream.protocol === 'tcp')) {
    handler.proxy_protocol = stream.proxy_protocol
  } else if (stream.proxy_protocol === 'v1') {
    warnings.push(`stream ${stream.name}: PROXY protocol v1 has no form for UDP; no header is sent (choose v2 for a UDP stream)`)
  }
  return handler
}

/**
 * `layer4.handlers.proxy_protocol`: the client address becomes the one the header names,
 * but only on connections from the trusted proxies. Any other source is passed on
 * untouched (`REJECT` here means "do not read a header", not "close"): its header, if it
 * sends one, is not believed and reaches the upstream as data.
 */
export function buildAcceptProxyProtocolHandler(stream: StreamSnapshot, trustedProxies: string[], warnings: string[]): Json | null {
  if (!stream.accept_proxy_protocol) return null
  if (stream.protocol === 'udp') {
    warnings.push(`stream ${stream.name}: a PROXY protocol header is only read on TCP streams; its UDP datagrams are taken as they come`)
    return null
  }
  if (!trustedProxies.length) {
    warnings.push(
      `stream ${stream.name}: accepts a PROXY protocol header, but the setting proxy.trusted_proxies is empty, so no header is believed; add the proxy in front of this one there`,
    )
    return null
  }
  return {
    handler: 'proxy_protocol',
    // caddy-l4 wants ranges; the setting also holds single addresses.
    allow: trustedProxies.map((p) => (p.includes('/') ? p : `${p}/${isIP(p) === 6 ? 128 : 32}`)),
    fallback_policy: 'REJECT',
    timeout: ACCEPT_PROXY_PROTOCOL_TIMEOUT,
  }
}

/** 'host:port' (a target address, validated by targetAddressSchema; IPv6 in brackets). */
function _splitAddress(address: string): { host: string; port: number } {
  const cut = address.lastIndexOf(':')
  return { host: address.slice(0, cut), port: Number(address.slice(cut + 1)) }
}
