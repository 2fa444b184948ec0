import { FORWARD_AUTH_CALLBACK_PATH, FORWARD_AUTH_CALLBACK_ROUTE } from '../../auth/session-cookie'
import type { Json } from './types'

export const FORWARD_AUTH_HEADERS = ['X-Auth-Email', 'X-Auth-Groups', 'X-Auth-Name', 'X-Auth-Provider', 'X-Auth-User'] as const

/**
 * Caddy's access log writes `user_id` from this placeholder, and its `vars` handler sets the
 * placeholder when given this name (Caddy >= 2.8; an older one keeps it as a plain variable and
 * logs nothing): so the row of an admitted request carries the panel's X-Auth-User (logs.actor).
 */
export const CADDY_AUTH_USER_ID_VAR = 'http.auth.user.id'

/**
 * A host without ForwardAuth: every spelling of every X-Auth-* header is taken out of the
 * client's request, so that an upstream that trusts them (it may have been behind ForwardAuth
 * before, or shares code with one that is) never reads a visitor's own `X-Auth-User: admin`.
 */
export function buildForwardAuthHeaderStripHandler(): Json {
  return { handler: 'headers', request: { delete: FORWARD_AUTH_HEADERS.flatMap(forwardAuthHeaderSpellings) } }
}

/**
 * Every spelling of a header name that an upstream may read as that header: Go keeps `X_Auth_User`
 * apart from `X-Auth-User`, but CGI and FastCGI (HTTP_X_AUTH_USER), and some WSGI servers, fold `_`
 * and `-` onto one variable. Case needs no variants: Caddy deletes by the canonical name.
 */
export function forwardAuthHeaderSpellings(header: string): string[] {
  const parts = header.split('-')
  let spellings = [parts[0]!]
  for (const part of parts.slice(1)) spellings = spellings.flatMap((s) => [`${s}-${part}`, `${s}_${part}`])
  return spellings
}

/** The variable holding the panel's answer for one header: '' when the answer lacks it. */
export function forwardAuthVarName(header: string): string {
  return `panel_auth_${header.toLowerCase().replace(/-/g, '_')}`
}

/**
 * The expanded form of Caddy's `forward_auth` (proxy-and-engine.md A4): a
 * sub-request to the panel's /auth/forward. On 2xx each X-Auth-* header is first
 * deleted from the client's request (so a client-sent copy never reaches the
 * upstream, whatever the answer carries) and then set from the panel's answer
 * when the answer has it. Any other answer (the panel's 302 to its login page)
 * goes back to the client as it is.
 *
 * One difference from A4, for Caddy 2.6.2: A4 guards each set with a `vars`
 * matcher keyed by the placeholder itself. When the answer lacks the header the
 * placeholder is unset; 2.11 compares an unset value as "" but 2.6.2 compares it
 * as "<nil>", so the guard passed and the upstream got the literal text
 * `{http.reverse_proxy.header.X-Auth-User}` (seen against the stock 2.6.2). So
 * the first route copies each header into a variable with the `vars` handler
 * (which turns an unset placeholder into "" in both versions), and the guard
 * matches that variable by name.
 */
export function buildForwardAuthHandler(panel: { dial: string; tls: boolean }): Json {
  const copy: Json = { handler: 'vars' }
  for (const name of FORWARD_AUTH_HEADERS) copy[forwardAuthVarName(name)] = `{http.reverse_proxy.header.${name}}`
  copy[CADDY_AUTH_USER_ID_VAR] = '{http.reverse_proxy.header.X-Auth-User}'
  const routes: Json[] = [{ handle: [copy] }]
  for (const name of FORWARD_AUTH_HEADERS) {
    routes.push({ handle: [{ handler: 'headers', request: { delete: forwardAuthHeaderSpellings(name) } }] })
    routes.push({
      match: [{ not: [{ vars: { [forwardAuthVarName(name)]: [''] } }] }],
      handle: [{ handler: 'headers', request: { set: { [name]: [`{http.reverse_proxy.header.${name}}`] } } }],
    })
  }
  return {
    handler: 'reverse_proxy',
    upstreams: [{ dial: panel.dial }],
    ...(panel.tls ? { transport: { protocol: 'http', tls: {} } } : {}),
    // The rewrite keeps the client's query string (Caddy's rewrite changes only the
    // parts given); the panel reads only the X-Forwarded-* headers.
    rewrite: { method: 'GET', uri: '/auth/forward' },
    headers: { request: { set: { 'X-Forwarded-Method': ['{http.request.method}'], 'X-Forwarded-Uri': ['{http.request.uri}'] } } },
    handle_response: [{ match: { status_code: [2] }, routes }],
  }
}

/**
 * After a successful ForwardAuth check, the panel's session cookie is taken out of
 * the request before it goes on: the upstream needs only the X-Auth-* headers, and
 * the cookie (scoped to the parent domain so that every protected host sends it)
 * would let the upstream, or whoever reads its logs, act as the signed-in operator
 * on the panel. The other cookies pass unchanged; Caddy applies the replacements in
 * order (the second drops the separator left when the session cookie came first).
 *
 * The other way, an upstream's `Set-Cookie` for one of these names is emptied (deferred:
 * it applies to the upstream's answer): an upstream under the cookie's domain could
 * otherwise overwrite the operator's panel cookie with its own session, or log them out.
 * An empty Set-Cookie value is ignored by browsers; the upstream's other cookies pass.
 */
export function buildPanelCookieStripHandler(cookieNames: string | readonly string[]): Json {
  const names = (typeof cookieNames === 'string' ? [cookieNames] : [...cookieNames]).map(_escapeRegexp)
  const alternation = names.length === 1 ? names[0]! : `(?:${names.join('|')})`
  return {
    handler: 'headers',
    request: {
      replace: {
        Cookie: [
          { search_regexp: `(^|;\\s*)${alternation}=[^;]*`, replace: '' },
          { search_regexp: '^;\\s*', replace: '' },
        ],
      },
    },
    // Browsers read a cookie's name after trimming blanks, and `__Host-` case-insensitively: so does this.
    response: { replace: { 'Set-Cookie': [{ search_regexp: `(?i)^\\s*${alternation}\\s*=.*$`, replace: '' }] }, deferred: true },
  }
}

function _escapeRegexp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * Strict session mode (docs/auth.md): the reserved path of a ForwardAuth-protected host goes to
 * the panel, which trades the one-time code of its query for the host's own credential (a
 * host-only cookie, so the host may be on any domain). It runs before the ForwardAuth check
 * (the browser has no credential yet) and outside the Set-Cookie scrub (the panel's answer sets it).
 * Caddy's reverse proxy passes Host and sets X-Forwarded-Host/Proto, which bind the code to the host.
 */
export function buildForwardAuthCallbackRoute(panel: { dial: string; tls: boolean }): Json {
  return {
    match: [{ path: [FORWARD_AUTH_CALLBACK_PATH] }],
    handle: [
      {
        handler: 'reverse_proxy',
        upstreams: [{ dial: panel.dial }],
        ...(panel.tls ? { transport: { protocol: 'http', tls: {} } } : {}),
        // The path only: the query (code and rd) is kept.
        rewrite: { uri: FORWARD_AUTH_CALLBACK_ROUTE },
      },
    ],
    terminal: true,
  }
}

/**
 * Whether browsers send the panel's session cookie to this host while the host is not the
 * panel itself: one of its names is the cookie's domain or under it, none is the panel's.
 */
export function receivesPanelCookie(names: string[], scope: { domain: string; panelHost: string }): boolean {
  const lower = names.map((n) => n.toLowerCase())
  if (lower.includes(scope.panelHost)) return false
  return lower.some((n) => n === scope.domain || n.endsWith(`.${scope.domain}`))
}

/** A name no visitor uses (`.invalid` is reserved, RFC 2606): the Host of the panel's reachability probe. */
export const FORWARD_AUTH_PROBE_HOST = 'forward-auth-probe.edge-panel.invalid'
export const FORWARD_AUTH_PROBE_ROUTE_ID = 'panel_forward_auth_probe'

/**
 * A route of the plain server that runs the very ForwardAuth sub-request the
 * hosts run (same handler, same dial) for the probe's Host, then answers 204.
 * The panel sends a request through it to learn whether the proxy reaches the
 * panel (docs/ui.md, "What a switch does"); it exists whether or not a host
 * uses ForwardAuth, so the check works before the first one is saved. A
 * visitor sending that Host gets what a protected host would answer: the
 * panel's redirect to its login page, or 204 with a session.
 */
export function buildForwardAuthProbeRoute(panel: { dial: string; tls: boolean }): Json {
  return {
    '@id': FORWARD_AUTH_PROBE_ROUTE_ID,
    match: [{ host: [FORWARD_AUTH_PROBE_HOST] }],
    handle: [buildForwardAuthHandler(panel), { handler: 'static_response', status_code: 204 }],
    terminal: true,
  }
}
