import { getConfig } from '../core/config'
import { FORWARD_AUTH_PROBE_HEADER, noteForwardAuthProbe } from '../proxy/forward-auth-check'
import { sanitizeRedirectTarget } from './redirect'
import { resolveCachedSession, resolveSession, type ResolvedSession } from './sessions'

/**
 * Rebuilds the URL the browser asked for from the proxy's X-Forwarded-* headers
 * and points at the panel's login page with it as `rd` (when it is on-domain).
 */
export function loginRedirectForForwardAuth(fwd: { proto?: string; host?: string; uri?: string }): string {
  const { publicUrl, domain } = getConfig()
  const proto = fwd.proto === 'http' ? 'http' : 'https'
  const uri = fwd.uri?.startsWith('/') ? fwd.uri : '/'
  const original = fwd.host ? `${proto}://${fwd.host}${uri}` : undefined
  const rd = original ? sanitizeRedirectTarget(original, domain, '') : ''
  return `${publicUrl}/login${rd ? `?rd=${encodeURIComponent(rd)}` : ''}`
}

/** What /auth/forward answers, whichever path serves it (the route, or the fast path of plugins/05-forward-auth.ts). */
export interface ForwardAuthAnswer {
  status: 200 | 302
  headers: Record<string, string>
  body: string
}

/** The inputs of answerForwardAuth from a request's headers and session cookie. */
export function forwardAuthRequestOf(header: (name: string) => string | undefined, sessionToken: string | undefined) {
  return {
    sessionToken,
    probeNonce: header(FORWARD_AUTH_PROBE_HEADER),
    forwarded: { proto: header('x-forwarded-proto'), host: header('x-forwarded-host'), uri: header('x-forwarded-uri') },
  }
}

/**
 * The proxy's sub-request: 200 + X-Auth-* for a valid session, else 302 to the
 * login page (with an HTML body naming it, as h3's sendRedirect writes).
 */
export async function answerForwardAuth(request: ForwardAuthRequest): Promise<ForwardAuthAnswer> {
  return _answerFor(request, await resolveSession(request.sessionToken)) // resolveSession asks the cache first
}

/** answerForwardAuth without a promise when the session cache decides (the proxy's repeated checks); undefined otherwise. */
export function answerForwardAuthFromCache(request: ForwardAuthRequest): ForwardAuthAnswer | undefined {
  const session = resolveCachedSession(request.sessionToken)
  return session === undefined ? undefined : _answerFor(request, session)
}

type ForwardAuthRequest = ReturnType<typeof forwardAuthRequestOf>

function _answerFor(request: ForwardAuthRequest, session: ResolvedSession | null): ForwardAuthAnswer {
  noteForwardAuthProbe(request.probeNonce)
  if (session) {
    const { user } = session
    return {
      status: 200,
      headers: {
        'x-auth-user': user.email,
        'x-auth-email': user.email,
        'x-auth-name': user.name || user.email,
        'x-auth-provider': user.provider,
        'cache-control': 'no-store',
        'content-type': 'text/html',
      },
      body: '',
    }
  }
  const location = loginRedirectForForwardAuth(request.forwarded)
  return {
    status: 302,
    headers: { location, 'content-type': 'text/html' },
    body: `<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url=${location.replace(/"/g, '%22')}"></head></html>`,
  }
}
