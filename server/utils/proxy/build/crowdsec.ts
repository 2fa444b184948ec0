import type { HostSnapshot, Json, ProxySnapshot, Route } from './types'

export function hostUsesBouncer(snapshot: ProxySnapshot, host: HostSnapshot): boolean {
  return snapshot.modules.includes('crowdsec') && !!snapshot.security.bouncerKey && host.bouncer_enabled
}

/** The bouncer handler: a banned source gets 403 before the WAF sees anything. */
export function buildCrowdsecHandler(): Json {
  return { handler: 'crowdsec' }
}

export function hostUsesAppsec(snapshot: ProxySnapshot, host: HostSnapshot): boolean {
  return hostUsesBouncer(snapshot, host) && !!snapshot.security.appsecUrl
}

/**
 * The request header that carries the panel's inbound anomaly threshold to the
 * engine's AppSec component. The bouncer forwards the request's headers, and the
 * panel's AppSec rules (deploy/crowdsec/appsec-rules/panel-appsec-threshold.yaml)
 * read it, so a threshold change applies with the next proxy push, without an
 * engine reload. The proxy sets it (a client's own value is overwritten) and
 * removes it again after AppSec, so neither the WAF nor the upstream sees it.
 */
export const APPSEC_THRESHOLD_HEADER = 'X-Panel-Appsec-Threshold'

export function buildAppsecThresholdHeader(inboundThreshold: number): Json {
  return { handler: 'headers', request: { set: { [APPSEC_THRESHOLD_HEADER]: [String(Math.trunc(inboundThreshold))] } } }
}

/** The AppSec handler (asks the engine's AppSec listener about each request), then the header removed. */
export function buildAppsecHandlers(): Json[] {
  return [{ handler: 'appsec' }, { handler: 'headers', request: { delete: [APPSEC_THRESHOLD_HEADER] } }]
}

export const ENGINE_DOWN_BODY = 'Service unavailable: the security engine cannot be reached\n'

/** A host that fails closed, while the engine is unreachable: everything gets 503. */
export function buildEngineDownRefusalRoute(): Route {
  return {
    handle: [{ handler: 'static_response', status_code: 503, headers: { 'Retry-After': ['30'] }, body: ENGINE_DOWN_BODY }],
    terminal: true,
  }
}

/**
 * A host that fails open, while the engine is unreachable: the bans last known
 * stay refused by the configuration (a push empties the bouncer's store, and it
 * cannot refill it), whitelisted sources excepted; everything else goes through.
 */
export function buildKnownBansRoute(knownBanned: string[], whitelist: string[], matcher: (ranges: string[]) => Json): Route {
  return {
    match: [{ ...matcher(knownBanned), ...(whitelist.length ? { not: [matcher(whitelist)] } : {}) }],
    handle: [{ handler: 'static_response', status_code: 403 }],
    terminal: true,
  }
}

/**
 * `apps.crowdsec`: the streaming bouncer's connection to the local API (A1).
 * AppSec fails open unless every host asking AppSec fails closed too
 * (engine_down_refuse): the bouncer has one such switch for all hosts.
 */
export function buildCrowdsecApp(security: ProxySnapshot['security'], appsecFailOpen = true): Json {
  return {
    // The Caddyfile parser adds the trailing slash; the JSON path does not.
    api_url: security.lapiUrl.endsWith('/') ? security.lapiUrl : `${security.lapiUrl}/`,
    api_key: security.bouncerKey,
    ticker_interval: security.tickerInterval,
    enable_streaming: true,
    ...(security.appsecUrl ? { appsec_url: security.appsecUrl, appsec_fail_open: appsecFailOpen } : {}),
  }
}

const _NAMES_SHOWN = 5

/**
 * One line for every host that asked for the bouncer and will not get it.
 * bouncer_enabled defaults to true, so this is one aggregated line, not one per host.
 */
export function buildCrowdsecWarnings(snapshot: ProxySnapshot, hosts: HostSnapshot[]): string[] {
  const wanting = hosts.filter((h) => h.bouncer_enabled)
  if (!wanting.length) return []
  let why: string
  if (!snapshot.modules.includes('crowdsec')) why = 'the proxy has no crowdsec module (PROXY_MODULES)'
  else if (!snapshot.security.bouncerKey) why = 'no bouncer key is configured (LAPI_BOUNCER_KEY)'
  else return []
  const names = wanting
    .slice(0, _NAMES_SHOWN)
    .map((h) => h.domain)
    .join(', ')
  const more = wanting.length > _NAMES_SHOWN ? ` and ${wanting.length - _NAMES_SHOWN} more` : ''
  const what = snapshot.security.appsecUrl ? 'the bouncer and AppSec are' : 'the bouncer is'
  return [`${why}; ${what} not applied to ${wanting.length} host(s): ${names}${more}`]
}

/** `@id` prefix of the warm-up routes: stripped before a configuration is compared or hashed. */
export const BOUNCER_WARMUP_ID = 'bouncer_warmup'

/**
 * The first route of a server while a new bouncer loads its decisions. Every
 * /load starts the bouncer with an empty store, filled by its first pull from
 * the local API: measured 0 to 60 ms here, up to 10 s when that pull fails.
 * Until `untilMs` (the proxy's clock, `{time.now.unix_ms}`) the sources banned
 * at push time get the bouncer's own answer (403, empty body) on the hosts that
 * use it. The time test is the outer match, so once it is past only one CEL
 * comparison per request remains; the list is never consulted again.
 */
export function buildBouncerWarmupRoute(
  server: string,
  names: string[],
  warmup: { untilMs: number; sources: string[] },
  whitelist: string[] = [],
): Route {
  // Whitelisted sources skip the bouncer, so they skip its stand-in too.
  const banned: Json = {
    client_ip: { ranges: warmup.sources },
    ...(whitelist.length ? { not: [{ client_ip: { ranges: whitelist } }] } : {}),
  }
  return {
    '@id': `${BOUNCER_WARMUP_ID}_${server}`,
    match: [{ host: names, expression: `int({time.now.unix_ms}) < ${Math.floor(warmup.untilMs)}` }],
    handle: [
      {
        handler: 'subroute',
        routes: [{ match: [banned], handle: [{ handler: 'static_response', status_code: 403 }] }],
      },
    ],
  }
}

/**
 * The layer-4 matcher that bounds a stream's warm-up route (stream-guards.ts): caddy-l4
 * has no expression matcher, so the project's `layer4.matchers.panel_before`
 * (deploy/proxy/caddy/streamext/before.go) plays the part of the time test. It is also
 * how the stripping below knows those routes: a stream's guards are repeated on every
 * port of a one_to_one range, so an `@id` (unique in a configuration) cannot name them.
 */
export const STREAM_WARMUP_MATCHER = 'panel_before'

type _Servers = Record<string, { routes?: Json[]; listener_wrappers?: Json[] }>

const _isStreamWarmup = (r: Json) => Array.isArray(r.match) && (r.match as Json[]).some((m) => !!m && STREAM_WARMUP_MATCHER in m)

/** Layer-4 routes without the streams' warm-up routes, subroutes included (SNI streams run their guards in one); the same array when there is none. */
function _stripLayer4Routes(routes: Json[]): Json[] {
  let changed = false
  const out: Json[] = []
  for (const route of routes) {
    if (_isStreamWarmup(route)) {
      changed = true
      continue
    }
    const handle = route.handle as Json[] | undefined
    const stripped = handle?.map((h) => {
      if (h.handler !== 'subroute' || !Array.isArray(h.routes)) return h
      const sub = _stripLayer4Routes(h.routes as Json[])
      return sub === h.routes ? h : { ...h, routes: sub }
    })
    if (handle && stripped!.some((h, i) => h !== handle[i])) {
      changed = true
      out.push({ ...route, handle: stripped })
    } else out.push(route)
  }
  return changed ? out : routes
}

/** Each server's routes by `strip`, plus the layer-4 routes of its listener wrappers (SNI beside the web hosts); the same object when nothing changed. */
function _stripServers(servers: _Servers | undefined, strip: (routes: Json[]) => Json[]): _Servers | undefined {
  if (!servers) return servers
  let changed = false
  const out: _Servers = {}
  for (const [name, server] of Object.entries(servers)) {
    const routes = server.routes ? strip(server.routes) : server.routes
    const wrappers = server.listener_wrappers?.map((w) => {
      if (!Array.isArray(w.routes)) return w
      const sub = _stripLayer4Routes(w.routes as Json[])
      return sub === w.routes ? w : { ...w, routes: sub }
    })
    const wrappersChanged = !!wrappers && wrappers.some((w, i) => w !== server.listener_wrappers![i])
    if (routes === server.routes && !wrappersChanged) out[name] = server
    else {
      changed = true
      out[name] = { ...server, ...(routes ? { routes } : {}), ...(wrappersChanged ? { listener_wrappers: wrappers } : {}) }
    }
  }
  return changed ? out : servers
}

/** The configuration without its warm-up routes: what the database says, the same from push to push. */
export function stripBouncerWarmup(config: unknown): unknown {
  type Apps = { http?: { servers?: _Servers }; layer4?: { servers?: _Servers } }
  const c = config as { apps?: Apps } | null
  const apps = c?.apps
  if (!apps) return config
  const isWarmup = (r: Json) => String(r['@id'] ?? '').startsWith(BOUNCER_WARMUP_ID)
  // Copies along the path to the routes only (a whole-config structuredClone cost 150-240 ms at 10,000 hosts); key order is kept.
  // The web hosts' warm-up routes are first-level routes of the HTTP servers: their thousands of routes are not walked into.
  const http = _stripServers(apps.http?.servers, (routes) => (routes.some(isWarmup) ? routes.filter((r) => !isWarmup(r)) : routes))
  const layer4 = _stripServers(apps.layer4?.servers, _stripLayer4Routes)
  if (http === apps.http?.servers && layer4 === apps.layer4?.servers) return config
  return {
    ...c,
    apps: {
      ...apps,
      ...(http !== apps.http?.servers ? { http: { ...apps.http, servers: http } } : {}),
      ...(layer4 !== apps.layer4?.servers ? { layer4: { ...apps.layer4, servers: layer4 } } : {}),
    },
  }
}
