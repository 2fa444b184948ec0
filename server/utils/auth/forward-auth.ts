import type { H3Event } from 'h3'
import { getConfig } from '../core/config'
import { FORWARD_AUTH_PROBE_HEADER, noteForwardAuthProbe } from '../proxy/forward-auth-check'
import { SECURITY_HEADER_NAMES, securityHeadersFor } from './cookie'
import { sanitizeRedirectTarget } from './redirect'
import { resolveCachedSession, resolveSession, type ResolvedSession } from './sessions'
import { resolveCachedForwardCredential, resolveForwardCredential, sessionForHost, strictForwardAuthStartUrl } from './forward-credentials'
import { FORWARD_AUTH_COOKIE, SESSION_COOKIE } from './session-cookie'
import { strictSessionsOn } from './strict-mode'
import { admitsUser, cachedHostIdentityRules, hostEntryRuleFor, loadHostIdentityRules, type HostEntryRule } from './host-identity'

/**
 * Rebuilds the URL the browser asked for from the proxy's X-Forwarded-* headers
 * and points at the panel's login page with it as `rd` (when it is on-domain).
 */
export function loginRedirectForForwardAuth(fwd: { proto?: string; host?: string; uri?: string }): string {
  const { publicUrl, domain } = getConfig()
  const proto = fwd.proto === 'http' ? 'http' : 'https'
  const uri = fwd.uri?.startsWith('/') ? fwd.uri : '/'
  const original = fwd.host ? `${proto}://${fwd.host}${uri}` : undefined
  // Strict session mode: any domain; the start of the exchange checks the host against the protected ones.
  if (strictSessionsOn()) return strictForwardAuthStartUrl(original)
  const rd = original ? sanitizeRedirectTarget(original, domain, '') : ''
  return `${publicUrl}/login${rd ? `?rd=${encodeURIComponent(rd)}` : ''}`
}

/** What /auth/forward answers, whichever path serves it (the route, or the fast path of plugins/05-forward-auth.ts). */
export interface ForwardAuthAnswer {
  readonly status: 200 | 302 | 403
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * The cookie /auth/forward reads: the session cookie, or in strict session mode the host's own
 * ForwardAuth credential (server/utils/auth/forward-credentials.ts).
 */
export function forwardAuthCookieName(): string {
  return strictSessionsOn() ? FORWARD_AUTH_COOKIE : SESSION_COOKIE
}

/** The inputs of answerForwardAuth: a request's session cookie (forwardAuthCookieName) and a reader of its headers. */
export function forwardAuthRequestOf(header: (name: string) => string | undefined, sessionToken: string | undefined) {
  return { sessionToken, header }
}

/**
 * The proxy's sub-request: 200 + X-Auth-* for a valid session the host admits, 403 with a page
 * naming the signed-in user for one it does not (docs/access-control.md, "Who may enter a
 * protected host": a redirect to the login would loop), else 302 to the login page (with an HTML
 * body naming it, as h3's sendRedirect writes). The 200 has no body, so no Content-Type.
 */
export async function answerForwardAuth(request: ForwardAuthRequest): Promise<ForwardAuthAnswer> {
  const rules = await loadHostIdentityRules()
  if (strictSessionsOn())
    return _answerFor(
      request,
      sessionForHost(await resolveForwardCredential(request.sessionToken), request.header('x-forwarded-host')),
      rules,
    )
  return _answerFor(request, await resolveSession(request.sessionToken), rules) // resolveSession asks the cache first
}

/** answerForwardAuth without a promise when the caches decide (the proxy's repeated checks); undefined otherwise. */
export function answerForwardAuthFromCache(request: ForwardAuthRequest): ForwardAuthAnswer | undefined {
  const rules = cachedHostIdentityRules()
  if (!rules) return undefined
  if (strictSessionsOn()) {
    const credential = resolveCachedForwardCredential(request.sessionToken)
    return credential === undefined ? undefined : _answerFor(request, sessionForHost(credential, request.header('x-forwarded-host')), rules)
  }
  const session = resolveCachedSession(request.sessionToken)
  return session === undefined ? undefined : _answerFor(request, session, rules)
}

type ForwardAuthRequest = ReturnType<typeof forwardAuthRequestOf>
type _Rules = Parameters<typeof hostEntryRuleFor>[0]

function _answerFor(request: ForwardAuthRequest, session: ResolvedSession | null, rules: _Rules): ForwardAuthAnswer {
  noteForwardAuthProbe(request.header(FORWARD_AUTH_PROBE_HEADER))
  if (session) {
    let answers = _answersOfSession.get(session)
    if (!answers) {
      answers = { admitted: _signedInAnswer(session.user, session.groups ?? []), refused: new WeakMap() }
      _answersOfSession.set(session, answers)
    }
    const rule = hostEntryRuleFor(rules, request.header('x-forwarded-host'))
    if (admitsUser(rule, session.user.id, session.groups)) return answers.admitted
    // rule is set here (no rule admits everyone); one page per session and host, as the admitted answer.
    let refused = answers.refused.get(rule!)
    if (!refused) {
      refused = _refusedAnswer(session.user, rule!)
      answers.refused.set(rule!, refused)
    }
    return refused
  }
  const location = loginRedirectForForwardAuth({
    proto: request.header('x-forwarded-proto'),
    host: request.header('x-forwarded-host'),
    uri: request.header('x-forwarded-uri'),
  })
  const body = `<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url=${location.replace(/"/g, '%22')}"></head></html>`
  return { status: 302, headers: { location, 'content-type': 'text/html', 'content-length': String(Buffer.byteLength(body)) }, body }
}

// A cached session is one object for the cache's life (30 s), and so are its answers: the proxy's
// repeated checks reuse them instead of building the same headers each time. Never mutated. The
// refusals are keyed by the host's rule object, which is replaced when the rules are read again.
const _answersOfSession = new WeakMap<
  ResolvedSession,
  { admitted: ForwardAuthAnswer; refused: WeakMap<HostEntryRule, ForwardAuthAnswer> }
>()

/**
 * The marker of an encoded X-Auth-* value: the start of an RFC 8187 ext-value (charset UTF-8, no
 * language), the rest being the UTF-8 bytes percent-encoded (`decodeURIComponent` of what follows
 * the marker gives the value back).
 */
export const FORWARD_AUTH_ENCODED_PREFIX = "UTF-8''"
// Printable ASCII without leading or trailing space (HTTP would strip those): sent as it is.
const _PLAIN_VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/
// RFC 8187 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
const _ATTR_CHAR = /^[A-Za-z0-9!#$&+\-.^_`|~]$/

/**
 * An X-Auth-* header value (docs/auth.md, ForwardAuth headers). HTTP header values are bytes, and
 * Node refuses any character above U+00FF: a name such as "Łukasz" would fail every check of that
 * user. Printable ASCII stays byte-identical, so upstreams see no change for ASCII names and
 * emails; anything else, and an ASCII value that itself starts with the marker (so that no plain
 * value can pass for an encoded one), is sent as `UTF-8''` + the percent-encoded UTF-8 bytes.
 */
export function forwardAuthHeaderValue(value: string): string {
  if (_PLAIN_VALUE.test(value) && !value.toLowerCase().startsWith(FORWARD_AUTH_ENCODED_PREFIX.toLowerCase())) return value
  let out = FORWARD_AUTH_ENCODED_PREFIX
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte)
    out += byte < 0x80 && _ATTR_CHAR.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

function _signedInAnswer(user: ResolvedSession['user'], groups: readonly string[]): ForwardAuthAnswer {
  // Built once per cached session (_answersOfSession): the encoding costs the fast path nothing.
  return {
    status: 200,
    headers: {
      'x-auth-user': forwardAuthHeaderValue(user.email),
      'x-auth-email': forwardAuthHeaderValue(user.email),
      'x-auth-name': forwardAuthHeaderValue(user.name || user.email),
      'x-auth-provider': forwardAuthHeaderValue(user.provider),
      // Comma-separated (a panel-local group name cannot hold a comma); left out when the user has none.
      ...(groups.length ? { 'x-auth-groups': forwardAuthHeaderValue(groups.join(',')) } : {}),
      'cache-control': 'no-store',
      // Declared, or Node sends the empty body chunked (writeHead fixes the framing before end).
      'content-length': '0',
    },
    body: '',
  }
}

function _escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/**
 * The page of a signed-in user the host does not admit. The proxy hands any answer but a 2xx to
 * the browser as it is (build/forward-auth.ts), so this is what the visitor sees: who they are
 * signed in as, that this host does not let them in, and where to switch account (the panel,
 * whose menu signs out). Nothing of the request is on it: the host's name is the panel's own.
 */
function _refusedAnswer(user: ResolvedSession['user'], rule: HostEntryRule): ForwardAuthAnswer {
  const { publicUrl } = getConfig()
  const who = _escapeHtml(user.name ? `${user.name} (${user.email})` : user.email)
  const body =
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>Not allowed on this site</title>' +
    '<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a;background:#fff}' +
    '@media (prefers-color-scheme:dark){body{color:#eee;background:#16181d}a{color:#8ab4ff}}</style></head><body>' +
    '<h1>Not allowed on this site</h1>' +
    `<p>You are signed in as <strong>${who}</strong>, but ${_escapeHtml(rule.domain)} does not let this account in.</p>` +
    '<p>Ask an administrator of the panel to add you or one of your groups to this site, ' +
    `or <a href="${_escapeHtml(publicUrl)}/">open the panel</a> to sign out and sign in with another account.</p>` +
    '</body></html>'
  return {
    status: 403,
    headers: { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store' },
    body,
  }
}

/**
 * Writes the answer, from the fast path (plugins/05-forward-auth.ts) or the route. The headers
 * meant for a browser (securityHeadersFor) go on the 302 only: the proxy hands that answer to the
 * browser as it is, while of a 200 it keeps the X-Auth-* headers for the upstream request and
 * discards the rest (the `handle_response` of build/forward-auth.ts), so on the hottest answer
 * they would be bytes every check writes and the proxy parses for nothing (docs/performance.md).
 */
export function sendForwardAuthAnswer(event: H3Event, answer: ForwardAuthAnswer): void {
  const res = event.node.res
  if (answer.status === 200) {
    // Through the app, the first middleware has set them already.
    for (const name of SECURITY_HEADER_NAMES) res.removeHeader(name)
    res.writeHead(200, answer.headers)
  } else res.writeHead(answer.status, { ...securityHeadersFor(event), ...answer.headers })
  res.end(answer.body)
}
