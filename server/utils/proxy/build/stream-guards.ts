import { buildAccessListIpRoutes } from './access-list'
import { STREAM_WARMUP_MATCHER } from './crowdsec'
import { LAN_RANGES } from './lan-gate'
import type { Json, ProxySnapshot, Route, StreamSnapshot } from './types'

// The guards of a stream's connections, before the proxy route, in the chain order
// of docs/streams.md: whitelist, LAN-only, access-list IP rules, engine down, the
// bouncer's warm-up after a push, CrowdSec.
//
// Each guard is a layer-4 route whose matcher picks the connections to refuse and
// whose one handler, `panel_refuse` (deploy/proxy/caddy/streamext/refuse.go), logs
// the reason and ends the connection before any byte is proxied. A connection no
// guard matches goes on to the next route, the proxy. The client is the
// connection's remote address (after a PROXY protocol header read from a trusted
// proxy): there is no X-Forwarded-For at layer 4, so `remote_ip` is always the
// matcher, never the web hosts' `client_ip`.

/** The reasons panel_refuse logs (its Go side checks the same list). */
export type StreamRefuseReason = 'lan_only' | 'access_list' | 'banned' | 'engine_down'

/** The layer-4 handler that ends a refused connection and says why. */
export function buildStreamRefuseHandler(stream: StreamSnapshot, reason: StreamRefuseReason): Json {
  return { handler: 'panel_refuse', stream_id: stream.id, reason }
}

/** Like hostUsesBouncer: the proxy has the bouncer and a key, and the stream asks for it. */
export function streamUsesBouncer(snapshot: ProxySnapshot, stream: StreamSnapshot): boolean {
  return snapshot.modules.includes('crowdsec') && !!snapshot.security.bouncerKey && stream.bouncer_enabled
}

/**
 * Whether an enabled stream fails closed while the engine is unreachable: like a host
 * with engine_down_refuse, it makes the reconciler push the engine-down configuration.
 */
export function streamFailsClosed(snapshot: ProxySnapshot, stream: StreamSnapshot): boolean {
  return stream.enabled && stream.engine_down_refuse && streamUsesBouncer(snapshot, stream)
}

const _remoteIp = (ranges: string[]): Json => ({ remote_ip: { ranges } })
/** The web hosts' matcher factory told there is no trusted proxy: it then writes `remote_ip`, the connection's own peer. */
const _NO_HEADERS: ProxySnapshot['clientIp'] = { trustedProxies: [], headers: [] }

function _refuse(stream: StreamSnapshot, reason: StreamRefuseReason, match?: Json): Route {
  return { ...(match ? { match: [match] } : {}), handle: [buildStreamRefuseHandler(stream, reason)] }
}

/**
 * The access list's IP rules with the web hosts' semantics (first match wins, then the
 * default): the same routes as a host's (access-list.ts, allow rules by exclusion), with
 * the refusal in place of the 403. The matcher shapes (`remote_ip`, `not`) are the same
 * at layer 4. Its basic-auth users do not apply: there is no HTTP here.
 */
function _accessListRoutes(stream: StreamSnapshot, snapshot: ProxySnapshot): Route[] {
  const list = stream.access_list_id == null ? undefined : snapshot.accessLists?.find((l) => l.id === stream.access_list_id)
  if (!list) return []
  return buildAccessListIpRoutes(list, _NO_HEADERS).map((r) => _refuse(stream, 'access_list', (r.match as Json[] | undefined)?.[0]))
}

/**
 * While the engine is unreachable, as for a host (_engineDownRoutes in index.ts): fail
 * closed refuses every connection, whitelisted sources included (nothing can be judged);
 * fail open keeps refusing the bans last known (a push empties the bouncer's store and
 * it cannot refill it), whitelisted sources excepted. Those are refused as `banned`:
 * the source is banned, the engine being away changes only who remembers it.
 */
function _engineDownRoutes(stream: StreamSnapshot, snapshot: ProxySnapshot): Route[] {
  if (snapshot.engineDown && stream.engine_down_refuse) return [_refuse(stream, 'engine_down')]
  const known = snapshot.engineDown?.knownBanned ?? []
  if (!known.length || !streamUsesBouncer(snapshot, stream)) return []
  const wl = snapshot.whitelist
  return [_refuse(stream, 'banned', { ..._remoteIp(known), ...(wl.length ? { not: [_remoteIp(wl)] } : {}) })]
}

/**
 * The bouncer warm-up, as for the web hosts (buildBouncerWarmupRoute): every push
 * restarts the bouncer with an empty store, filled by its first pull from the engine,
 * so the sources banned at push time (snapshot.bouncerWarmup, set by the reconciler)
 * are refused by the configuration until `untilMs`, whitelisted sources excepted.
 * The time test is the outer match (`panel_before`, the project's layer-4 matcher:
 * caddy-l4 has no expression matcher) and the list is in a subroute, because the
 * matchers of one set run in no fixed order: once the window is past, a connection
 * costs one comparison and the list is never read again. A source the subroute does
 * not refuse goes on to the next route.
 */
function _warmupRoute(stream: StreamSnapshot, snapshot: ProxySnapshot): Route[] {
  const warmup = snapshot.bouncerWarmup
  if (!warmup?.sources.length || !streamUsesBouncer(snapshot, stream)) return []
  const wl = snapshot.whitelist
  const banned = { ..._remoteIp(warmup.sources), ...(wl.length ? { not: [_remoteIp(wl)] } : {}) }
  return [
    {
      match: [{ [STREAM_WARMUP_MATCHER]: { until_unix_ms: Math.floor(warmup.untilMs) } }],
      handle: [{ handler: 'subroute', routes: [_refuse(stream, 'banned', banned)] }],
    },
  ]
}

/**
 * The bouncer's layer-4 matcher matches a source it allows, so a banned one is its
 * negation. A whitelisted source is never judged: `not` over two matcher sets is
 * "neither whitelisted nor allowed", and its sets are tried in order, so a
 * whitelisted source stops at the first and never costs the bouncer a look-up.
 */
function _crowdsecRoute(stream: StreamSnapshot, snapshot: ProxySnapshot): Route[] {
  if (!streamUsesBouncer(snapshot, stream)) return []
  const wl = snapshot.whitelist
  return [_refuse(stream, 'banned', { not: [...(wl.length ? [_remoteIp(wl)] : []), { crowdsec: {} }] })]
}

/** The refusal routes of one stream, in order; [] when nothing guards it. */
export function buildStreamGuardRoutes(stream: StreamSnapshot, snapshot: ProxySnapshot): Route[] {
  return [
    // A public source is closed: the spec's LAN ranges, the ones of the web hosts' LAN gate.
    ...(stream.lan_only ? [_refuse(stream, 'lan_only', { not: [_remoteIp(LAN_RANGES)] })] : []),
    ..._accessListRoutes(stream, snapshot),
    ..._engineDownRoutes(stream, snapshot),
    // The bans at push time, while the new bouncer loads them (the reconciler sets this only with the engine up).
    ..._warmupRoute(stream, snapshot),
    ..._crowdsecRoute(stream, snapshot),
  ]
}

/**
 * Whether some enabled stream asks the bouncer: the `crowdsec` app (the bouncer's
 * connection to the engine) must then exist even when no web host uses it, since
 * the layer-4 matcher reads its decisions from that app. AppSec is HTTP only, so
 * its fail mode stays the hosts' own.
 */
export function streamsUseBouncer(snapshot: ProxySnapshot): boolean {
  return (snapshot.streams ?? []).some((s) => s.enabled && streamUsesBouncer(snapshot, s))
}
