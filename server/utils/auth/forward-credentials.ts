import { randomBytes } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import { getQuery, setCookie, setResponseHeader, type H3Event } from 'h3'
import { forwardAuthCodes, forwardAuthCredentials, hosts, sessions, users } from '../../../db/schema'
import { writeAudit } from '../core/audit'
import { getConfig } from '../core/config'
import { getDb, runWrite, writeTransaction } from '../core/db'
import { badRequest, pathNotFound } from '../core/errors'
import { kvPeekFresh, kvSetWithTtl } from '../core/kv'
import { clientIpOf } from '../core/request'
import { parseQueryWith } from '../core/validate'
import { forwardAuthCallbackQuery, forwardAuthStartQuery } from './schemas'
import { readSessionCookie } from './cookie'
import { FORWARD_AUTH_CALLBACK_PATH, FORWARD_AUTH_COOKIE, FORWARD_AUTH_START_ROUTE } from './session-cookie'
import {
  forwardCredentialCacheKey,
  hashSessionToken,
  memoizedTokenCacheKey,
  groupsOfUser,
  presentSessionUser,
  resolveSession,
  SESSION_CACHE_TTL_MS,
  slideSessionExpiry,
  type ResolvedSession,
} from './sessions'
import { strictSessionsOn, STRICT_SESSIONS_SETTING } from './strict-mode'

// Strict session mode (docs/auth.md, "Strict session mode"): the panel's session cookie stays on
// the panel's own name, and each ForwardAuth-protected host gets a credential of its own:
//   1. /auth/forward without a valid credential for the host sends the browser to
//      <PANEL_PUBLIC_URL>/auth/forward/start?rd=<the original URL>;
//   2. there, with a panel session, the panel mints a one-time code bound to (session, host) and
//      sends the browser to https://<host>/.panel-auth/callback?code=...&rd=<path>;
//   3. the proxy hands that path to the panel (/auth/forward/callback), which trades the code
//      for a host-only cookie `panel_fa` on the host and sends the browser on to rd.
// The credential opens /auth/forward for its host only, never /api (the API reads only the
// session cookie and bearer tokens), and it lives only as long as its session.

/** A code is traded by the browser's next request: a minute covers a slow network. */
export const FORWARD_AUTH_CODE_LIFETIME_MS = 60_000

/** A resolved credential: the session it hangs off, and the one host it opens. */
export interface ResolvedForwardCredential {
  session: ResolvedSession
  host: string
}

/** A Host or X-Forwarded-Host value as the name it carries: lower case, no port, no trailing dot. */
export function hostnameOfHostValue(value: string | undefined): string {
  if (!value) return ''
  const first = value.split(',')[0]!.trim().toLowerCase()
  const name = first.startsWith('[') ? first.slice(0, first.indexOf(']') + 1) : first.split(':')[0]!
  return name.replace(/\.$/, '')
}

function _cachedCredential(cacheKey: string): ResolvedForwardCredential | null | undefined {
  const cached = kvPeekFresh<ResolvedForwardCredential | null>(cacheKey)
  if (cached && cached.session.expiresAtMs <= Date.now()) return null
  return cached
}

/** resolveForwardCredential's answer when the cache holds it, without a promise (ForwardAuth's fast path). */
export function resolveCachedForwardCredential(token: string | undefined): ResolvedForwardCredential | null | undefined {
  if (!token || token.length > 128) return null
  return _cachedCredential(_recentCacheKey(token))
}

// As for sessions: the proxy asks about the same few credentials over and over, and the hash was
// most of a cached answer's cost. Bounded; hashes stay the only stored form.
const _recentCacheKey = memoizedTokenCacheKey(forwardCredentialCacheKey)

/**
 * Credential -> its session, user and host. The session's own rules apply: the 30 s cache, and
 * last_seen written (sliding the expiry) only when older than 5 minutes, so a user who only
 * visits protected hosts keeps the session as in the default mode.
 */
export async function resolveForwardCredential(token: string | undefined): Promise<ResolvedForwardCredential | null> {
  if (!token || token.length > 128) return null
  const tokenHash = hashSessionToken(token)
  const cacheKey = forwardCredentialCacheKey(tokenHash)
  const cached = _cachedCredential(cacheKey)
  if (cached !== undefined) return cached
  const row = await getDb()
    .select({ c: forwardAuthCredentials, s: sessions, u: users })
    .from(forwardAuthCredentials)
    .innerJoin(sessions, eq(sessions.id, forwardAuthCredentials.sessionId))
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(eq(forwardAuthCredentials.tokenHash, tokenHash))
    .get()
  const now = Date.now()
  let resolved: ResolvedForwardCredential | null = null
  if (row && row.s.expiresAtMs > now) {
    const expiresAtMs = await slideSessionExpiry(row.s, now)
    resolved = {
      session: { user: presentSessionUser(row.u), groups: groupsOfUser(row.u), sessionId: row.s.id, expiresAtMs },
      host: row.c.host,
    }
  }
  await kvSetWithTtl(cacheKey, resolved, SESSION_CACHE_TTL_MS)
  return resolved
}

/** The session a credential stands for on this request: none unless the request is for the credential's own host. */
export function sessionForHost(credential: ResolvedForwardCredential | null, forwardedHost: string | undefined): ResolvedSession | null {
  if (!credential) return null
  // The last value and its name: a protected host's checks carry the same header again and again.
  if (forwardedHost !== _lastForwardedHost) {
    _lastHostname = hostnameOfHostValue(forwardedHost)
    _lastForwardedHost = forwardedHost
  }
  return credential.host === _lastHostname ? credential.session : null
}
let _lastForwardedHost: string | undefined
let _lastHostname = ''

/** Where /auth/forward sends a browser without a credential for the host: the start of the exchange, on the panel. */
export function strictForwardAuthStartUrl(original: string | undefined): string {
  return `${getConfig().publicUrl}${FORWARD_AUTH_START_ROUTE}${original ? `?rd=${encodeURIComponent(original)}` : ''}`
}

function _refuseWhenOff(): void {
  if (!strictSessionsOn())
    throw pathNotFound(
      `strict session mode is off (setting ${STRICT_SESSIONS_SETTING}): ForwardAuth reads the panel session cookie, there is no code to exchange`,
    )
}

/** The protected host a return URL names, or the reason it cannot be one. */
async function _protectedTarget(rd: string): Promise<URL> {
  if (!rd) throw badRequest('rd: the URL of the protected page is required (ForwardAuth puts it there)')
  let url: URL | undefined
  try {
    if (rd.length <= 4096 && !/[\\\u0000-\u001f\u007f]/.test(rd)) url = new URL(rd)
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password)
    throw badRequest('rd: must be the http(s) URL of a page on a host protected by ForwardAuth')
  const name = hostnameOfHostValue(url.host)
  const rows = await getDb()
    .select({ domain: hosts.domain, aliases: hosts.aliases })
    .from(hosts)
    .where(and(eq(hosts.enabled, true), eq(hosts.authRequired, true)))
  if (!rows.some((h) => [h.domain, ...h.aliases].some((n) => n.toLowerCase() === name)))
    throw badRequest(`rd: ${name} is not an enabled host with auth_required on this panel; a code is only issued for those`)
  return url
}

/**
 * GET /auth/forward/start?rd=<URL>, on the panel's name: with a panel session, a one-time
 * code for the host of rd and a redirect to that host's callback path. Without one, to the
 * login page, which comes back here. The session cookie is SameSite=Strict, so a browser
 * arriving from the protected host (another site) does not send it on this first request:
 * the page answers once with a same-site reload of itself (`bounce=1`), which does.
 */
export async function startForwardAuthExchange(event: H3Event): Promise<void> {
  const query = parseQueryWith(forwardAuthStartQuery, getQuery(event))
  _refuseWhenOff()
  const target = await _protectedTarget(query.rd)
  const session = await resolveSession(readSessionCookie(event))
  const here = `${FORWARD_AUTH_START_ROUTE}?rd=${encodeURIComponent(target.href)}`
  setResponseHeader(event, 'cache-control', 'no-store')
  if (!session) {
    if (query.bounce !== '1') {
      const again = `${here}&bounce=1`
      // No favicon request for a page shown for an instant (the icon link).
      setResponseHeader(event, 'content-type', 'text/html; charset=utf-8')
      event.node.res.statusCode = 200
      event.node.res.end(
        `<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url=${again.replace(/"/g, '%22')}"><link rel="icon" href="data:,"></head></html>`,
      )
      return
    }
    return _redirect(event, `${getConfig().publicUrl}/login?rd=${encodeURIComponent(here)}`)
  }
  const code = randomBytes(32).toString('base64url')
  await runWrite(() =>
    getDb()
      .insert(forwardAuthCodes)
      .values({
        codeHash: hashSessionToken(code),
        sessionId: session.sessionId,
        host: hostnameOfHostValue(target.host),
        expiresAtMs: Date.now() + FORWARD_AUTH_CODE_LIFETIME_MS,
      }),
  )
  const back = `${target.pathname}${target.search}`
  return _redirect(event, `${target.protocol}//${target.host}${FORWARD_AUTH_CALLBACK_PATH}?code=${code}&rd=${encodeURIComponent(back)}`)
}

/** A return path on the same host: a path, never //host, a backslash or a control character. */
function _sameHostPath(rd: unknown): string {
  if (typeof rd !== 'string' || !rd.startsWith('/') || rd.startsWith('//') || rd.length > 4096) return '/'
  return /[\\\u0000-\u001f\u007f]/.test(rd) ? '/' : rd
}

/**
 * GET /auth/forward/callback?code=...&rd=<path>, reached through the proxy on the protected host
 * (the builder routes /.panel-auth/callback there): the code is deleted whatever happens next (single
 * use), and when it is fresh, was minted for this host (X-Forwarded-Host, which the proxy sets) and
 * its session still lives, the host gets its credential and the browser goes on to rd.
 */
export async function finishForwardAuthExchange(event: H3Event): Promise<void> {
  const query = parseQueryWith(forwardAuthCallbackQuery, getQuery(event))
  _refuseWhenOff()
  const code = query.code
  const host = hostnameOfHostValue(event.node.req.headers['x-forwarded-host'] as string | undefined)
  const granted = await writeTransaction(async (tx) => {
    if (!code || !host) return null
    const used = await tx
      .delete(forwardAuthCodes)
      .where(eq(forwardAuthCodes.codeHash, hashSessionToken(code)))
      .returning()
      .get()
    if (!used || used.expiresAtMs <= Date.now() || used.host !== host) return null
    const row = await tx
      .select({ s: sessions, u: users })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(eq(sessions.id, used.sessionId))
      .get()
    if (!row || row.s.expiresAtMs <= Date.now()) return null
    const token = randomBytes(32).toString('base64url')
    await tx
      .insert(forwardAuthCredentials)
      .values({ tokenHash: hashSessionToken(token), sessionId: row.s.id, host, createdAtMs: Date.now() })
    await writeAudit(
      {
        actor: row.u.email,
        remoteIp: clientIpOf(event),
        userAgent: event.node.req.headers['user-agent']?.slice(0, 512) ?? null,
      },
      'forward_auth_grant',
      { host, session_id: row.s.id },
      tx,
    )
    return { token, expiresAtMs: row.s.expiresAtMs }
  })
  if (!granted)
    throw badRequest('code: unknown, already used, expired, or minted for another host; open the protected page again to get a new one')
  const secure = event.node.req.headers['x-forwarded-proto'] === 'https'
  // Host-only (no Domain): this host alone sends it back. Lax: the browser arrives from the panel, another site.
  setCookie(event, FORWARD_AUTH_COOKIE, granted.token, {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure,
    maxAge: Math.max(1, Math.floor((granted.expiresAtMs - Date.now()) / 1000)),
  })
  setResponseHeader(event, 'cache-control', 'no-store')
  return _redirect(event, _sameHostPath(query.rd))
}

function _redirect(event: H3Event, location: string): void {
  event.node.res.statusCode = 302
  setResponseHeader(event, 'location', location)
  event.node.res.end()
}
