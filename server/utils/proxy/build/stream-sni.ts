import { buildStreamGuardRoutes } from './stream-guards'
import { buildStreamConnectionLogHandler } from './stream-logging'
import type { Json, ProxySnapshot, Route, StreamSnapshot, TargetGroupSnapshot } from './types'

// SNI routing (docs/streams.md, "SNI routing"): a TCP stream with `tls_sni` names is
// chosen by the server name of the TLS ClientHello and passed through untouched (the
// proxy never terminates that TLS). On the HTTPS port the routes run as a layer-4
// listener wrapper in front of the HTTP app's own `tls` wrapper, so a name no stream
// claims falls through to the web hosts; on any other port they are a layer-4 server
// of their own, where a name no stream claims is closed.

/** The layer-4 proxy handler of a stream toward its target group (streams.ts builds the same for plain streams). */
export type StreamProxyHandler = (stream: StreamSnapshot, group: TargetGroupSnapshot, warnings: string[]) => Json

/** A stream routed by the ClientHello's server name: enabled, TCP, with names (a range is refused by the body schema). */
export function isSniStream(stream: StreamSnapshot): boolean {
  return stream.enabled && stream.protocol === 'tcp' && stream.tls_sni.length > 0
}

/** The streams the plain layer-4 build (streams.ts) handles: every one SNI routing does not. */
export function streamsWithoutSni(streams: StreamSnapshot[] | undefined): StreamSnapshot[] | undefined {
  return streams?.filter((s) => !isSniStream(s))
}

/**
 * The plain layer-4 proxy handler, until the builder's own one is shared: the group's
 * targets in its order (the `first` policy relies on it), its policy, a 2 s retry on
 * another target (like a web host), and the PROXY protocol header if the stream asks for one.
 */
export function defaultSniProxyHandler(stream: StreamSnapshot, group: TargetGroupSnapshot): Json {
  const handler: Json = {
    handler: 'proxy',
    upstreams: group.targets.map((t) => ({
      dial: [t.address],
      ...(group.lb_policy === 'weighted_round_robin' ? { weight: t.weight } : {}),
    })),
    load_balancing: { selection: { policy: group.lb_policy }, try_duration: '2s' },
  }
  if (stream.proxy_protocol !== 'off') handler.proxy_protocol = stream.proxy_protocol
  return handler
}

interface SniStreamEntry {
  stream: StreamSnapshot
  group: TargetGroupSnapshot
}

/** The SNI streams that can be built, by listen port, each port's streams by id (equal snapshots give equal bytes). */
function _sniStreamsByPort(snapshot: ProxySnapshot, warnings: string[]): Map<number, SniStreamEntry[]> {
  const groups = new Map(snapshot.targetGroups.map((g) => [g.id, g]))
  const byPort = new Map<number, SniStreamEntry[]>()
  for (const stream of [...(snapshot.streams ?? [])].filter(isSniStream).sort((a, b) => a.id - b.id)) {
    const group = groups.get(stream.target_group_id)
    if (!group) {
      warnings.push(`stream ${stream.name}: its target group no longer exists, so it opens no listener`)
      continue
    }
    byPort.set(stream.listen_port, [...(byPort.get(stream.listen_port) ?? []), { stream, group }])
  }
  return new Map([...byPort].sort(([a], [b]) => a - b))
}

const _isWildcard = (name: string) => name.startsWith('*.')

/** Does `*.example.com` cover this name (one label, as Caddy's SNI matcher reads a wildcard)? */
function _wildcardCovers(wildcard: string, name: string): boolean {
  const suffix = wildcard.slice(1).toLowerCase()
  const n = name.toLowerCase()
  return n.endsWith(suffix) && n.length > suffix.length && !n.slice(0, -suffix.length).includes('.')
}

/** One stream's connection chain once its name matched: its guards, then the proxy (its log handler first). */
function _streamHandle(entry: SniStreamEntry, snapshot: ProxySnapshot, proxyHandler: StreamProxyHandler, warnings: string[]): Json[] {
  const logHandler = buildStreamConnectionLogHandler(entry.stream)
  const proxyRoute: Route = { handle: [...(logHandler ? [logHandler] : []), proxyHandler(entry.stream, entry.group, warnings)] }
  return [{ handler: 'subroute', routes: [...buildStreamGuardRoutes(entry.stream, snapshot), proxyRoute] }]
}

/**
 * The routes of one port's SNI streams. Exact names come before every wildcard, so
 * `a.example.com` of one stream wins over `*.example.com` of another whatever their ids;
 * a wildcard never takes a name a web host on the same port serves (`webHostNames`),
 * which would otherwise lose its HTTPS to the stream.
 */
function _sniRoutes(
  entries: SniStreamEntry[],
  snapshot: ProxySnapshot,
  webHostNames: string[],
  proxyHandler: StreamProxyHandler,
  warnings: string[],
): Route[] {
  const exact: Route[] = []
  const wildcard: Route[] = []
  for (const entry of entries) {
    const handle = _streamHandle(entry, snapshot, proxyHandler, warnings)
    const names = entry.stream.tls_sni.filter((n) => !_isWildcard(n))
    const wildcards = entry.stream.tls_sni.filter(_isWildcard)
    if (names.length) exact.push({ match: [{ tls: { sni: names } }], handle })
    if (wildcards.length) {
      const spared = webHostNames.filter((h) => !_isWildcard(h) && wildcards.some((w) => _wildcardCovers(w, h)))
      const matcher: Json = { tls: { sni: wildcards } }
      if (spared.length) matcher.not = [{ tls: { sni: spared } }]
      wildcard.push({ match: [matcher], handle })
    }
  }
  return [...exact, ...wildcard]
}

/** `tcp/<address>:<port>` for each address the HTTPS listener binds (a stream listens where the web hosts do). */
function _listenOn(snapshot: ProxySnapshot, port: number): string[] {
  const hosts = [...new Set(snapshot.httpsListen.map((a) => a.slice(0, a.lastIndexOf(':'))))]
  return hosts.map((h) => `tcp/${h}:${port}`)
}

/**
 * The listener wrappers of the HTTP app's https server when SNI streams share its port:
 * the layer-4 routes first (they read the ClientHello without consuming it), then
 * Caddy's `tls` wrapper, which terminates what no stream took. {} without such streams.
 */
export function buildSniListenerWrappers(
  snapshot: ProxySnapshot,
  webHostNames: string[],
  warnings: string[],
  proxyHandler: StreamProxyHandler = defaultSniProxyHandler,
): Json {
  const entries = _sniStreamsByPort(snapshot, warnings).get(snapshot.httpsPort)
  if (!entries?.length) return {}
  return {
    listener_wrappers: [
      { wrapper: 'layer4', routes: _sniRoutes(entries, snapshot, webHostNames, proxyHandler, warnings) },
      { wrapper: 'tls' },
    ],
  }
}

/**
 * The layer-4 servers of SNI streams that do not ride on the HTTP app: one per port,
 * named `sni-<port>`; the HTTPS port only when the HTTP app has no https server
 * (no TLS web host), since two apps cannot bind one port.
 */
export function buildSniServers(
  snapshot: ProxySnapshot,
  httpsServerExists: boolean,
  warnings: string[],
  proxyHandler: StreamProxyHandler = defaultSniProxyHandler,
): Record<string, Json> {
  const servers: Record<string, Json> = {}
  for (const [port, entries] of _sniStreamsByPort(snapshot, warnings)) {
    if (port === snapshot.httpsPort && httpsServerExists) continue
    servers[`sni-${port}`] = { listen: _listenOn(snapshot, port), routes: _sniRoutes(entries, snapshot, [], proxyHandler, warnings) }
  }
  return servers
}

/** The layer-4 app with the SNI servers added beside the plain streams' ones (null: no layer-4 app at all). */
export function withSniServers(layer4: Json | null, sniServers: Record<string, Json>): Json | null {
  if (!Object.keys(sniServers).length) return layer4
  const servers = (layer4?.servers as Record<string, Json> | undefined) ?? {}
  return { ...layer4, servers: { ...servers, ...sniServers } }
}
