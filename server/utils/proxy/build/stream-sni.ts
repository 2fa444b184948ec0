import { buildStreamGuardRoutes } from './stream-guards'
import { buildStreamConnectionLogHandler } from './stream-logging'
import { buildAcceptProxyProtocolHandler, buildStreamProxyHandler, streamListenHosts } from './streams'
import type { HostSnapshot, Json, ProxySnapshot, Route, StreamSnapshot, TargetGroupSnapshot } from './types'

// SNI routing (docs/streams.md, "SNI routing"): a TCP stream with `tls_sni` names is
// chosen by the server name of the TLS ClientHello and passed through untouched (the
// proxy never terminates that TLS). On the HTTPS port the routes run as a layer-4
// listener wrapper in front of the HTTP app's own `tls` wrapper, so a name no stream
// claims falls through to the web hosts; on any other port they are a layer-4 server
// of their own, where a name no stream claims is closed.

/** A stream routed by the ClientHello's server name: enabled, TCP, with names (a range is refused by the body schema). */
export function isSniStream(stream: StreamSnapshot): boolean {
  return stream.enabled && stream.protocol === 'tcp' && stream.tls_sni.length > 0
}

/** Whether any stream is routed by SNI: its connection rows need the layer-4 log even with no layer-4 app (the HTTPS port's wrapper). */
export function hasSniStreams(snapshot: ProxySnapshot): boolean {
  return (snapshot.streams ?? []).some(isSniStream)
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
function _streamHandle(entry: SniStreamEntry, snapshot: ProxySnapshot, warnings: string[]): Json[] {
  const logHandler = buildStreamConnectionLogHandler(entry.stream)
  const proxy = buildStreamProxyHandler(entry.stream, entry.group, warnings)
  const proxyRoute: Route = { handle: [...(logHandler ? [logHandler] : []), proxy] }
  return [{ handler: 'subroute', routes: [...buildStreamGuardRoutes(entry.stream, snapshot), proxyRoute] }]
}

/**
 * The routes of one port's SNI streams. Exact names come before every wildcard, so
 * `a.example.com` of one stream wins over `*.example.com` of another whatever their ids;
 * a wildcard never takes a name a web host on the same port serves (`webHostNames`),
 * which would otherwise lose its HTTPS to the stream.
 */
function _sniRoutes(entries: SniStreamEntry[], snapshot: ProxySnapshot, webHostNames: string[], warnings: string[]): Route[] {
  const exact: Route[] = []
  const wildcard: Route[] = []
  for (const entry of entries) {
    const handle = _streamHandle(entry, snapshot, warnings)
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

/**
 * A PROXY protocol header comes before the ClientHello, so reading it is the port's
 * choice, not one stream's: the port reads it (from trusted proxies only) when any of
 * its streams accepts it.
 */
function _acceptProxyProtocolRoutes(entries: SniStreamEntry[], snapshot: ProxySnapshot, warnings: string[]): Route[] {
  const accepting = entries.find((e) => e.stream.accept_proxy_protocol)
  const handler = accepting && buildAcceptProxyProtocolHandler(accepting.stream, snapshot.clientIp.trustedProxies, warnings)
  return handler ? [{ handle: [handler] }] : []
}

/**
 * The listener wrappers of the HTTP app's https server when SNI streams share its port:
 * the layer-4 routes first (they read the ClientHello without consuming it), then
 * Caddy's `tls` wrapper, which terminates what no stream took. {} without such streams.
 */
export function buildSniListenerWrappers(snapshot: ProxySnapshot, tlsHosts: HostSnapshot[], warnings: string[]): Json {
  const entries = _sniStreamsByPort(snapshot, warnings).get(snapshot.httpsPort)
  if (!entries?.length) return {}
  for (const { stream } of entries.filter((e) => e.stream.accept_proxy_protocol)) {
    // Every web host's connection passes the same wrapper: a header read there would be
    // read for them too, which their own trusted-proxies setting does not expect.
    warnings.push(
      `stream ${stream.name}: a PROXY protocol header is not read on the HTTPS port shared with the web hosts; give the stream a port of its own to accept one`,
    )
  }
  const webHostNames = tlsHosts.flatMap((h) => [h.domain, ...h.aliases])
  return {
    listener_wrappers: [{ wrapper: 'layer4', routes: _sniRoutes(entries, snapshot, webHostNames, warnings) }, { wrapper: 'tls' }],
  }
}

/**
 * The layer-4 servers of SNI streams that do not ride on the HTTP app: one per port,
 * named `sni-<port>`; the HTTPS port only when the HTTP app has no https server
 * (no TLS web host), since two apps cannot bind one port.
 */
export function buildSniServers(snapshot: ProxySnapshot, httpsServerExists: boolean, warnings: string[]): Record<string, Json> {
  const servers: Record<string, Json> = {}
  const hosts = streamListenHosts(snapshot)
  for (const [port, entries] of _sniStreamsByPort(snapshot, warnings)) {
    if (port === snapshot.httpsPort && httpsServerExists) continue
    servers[`sni-${port}`] = {
      listen: hosts.map((h) => `tcp/${h}:${port}`),
      routes: [..._acceptProxyProtocolRoutes(entries, snapshot, warnings), ..._sniRoutes(entries, snapshot, [], warnings)],
    }
  }
  return servers
}

/** The layer-4 app with the SNI servers added beside the plain streams' ones (null: no layer-4 app at all). */
export function withSniServers(layer4: Json | null, sniServers: Record<string, Json>): Json | null {
  if (!Object.keys(sniServers).length) return layer4
  const servers = (layer4?.servers as Record<string, Json> | undefined) ?? {}
  return { ...layer4, servers: { ...servers, ...sniServers } }
}
