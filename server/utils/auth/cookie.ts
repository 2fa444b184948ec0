import { deleteCookie, getCookie, setCookie, type H3Event } from 'h3'
import { cookieDomainFor, getConfig } from '../core/config'
import { HOST_SESSION_COOKIE } from './session-cookie'
import { SESSION_COOKIE, SESSION_LIFETIME_MS } from './sessions'
import { strictSessionsOn } from './strict-mode'

// The rule lives with the configuration, which refuses a PANEL_DOMAIN whose cookie domain is a public suffix.
export { cookieDomainFor } from '../core/config'

export function isLoopbackHostname(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h)
}

function _hostnameOfHostHeader(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1)
  return host.split(':')[0]!
}

/** Secure applies everywhere except LAN mode reached from a browser that is not on localhost. */
export function isSecureContextFor(event: H3Event): boolean {
  if (getConfig().mode === 'public') return true
  // Node's own header (h3's getRequestHeader copies every header first): this runs on every answer.
  return _isLoopbackHostHeader(event.node.req.headers.host ?? '')
}

// The last Host header seen and its answer: the proxy's ForwardAuth checks all carry the same one.
let _lastHost: string | undefined
let _lastHostIsLoopback = false
function _isLoopbackHostHeader(host: string): boolean {
  if (host !== _lastHost) {
    _lastHostIsLoopback = isLoopbackHostname(_hostnameOfHostHeader(host))
    _lastHost = host
  }
  return _lastHostIsLoopback
}

// No page may frame the panel (clickjacking): frame-ancestors for current browsers, X-Frame-Options for older ones.
const _BASE_HEADERS = Object.freeze({
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'content-security-policy': "frame-ancestors 'none'",
  'x-frame-options': 'DENY',
})
const _SECURE_HEADERS = Object.freeze({ ..._BASE_HEADERS, 'strict-transport-security': 'max-age=31536000' })
export const SECURITY_HEADER_NAMES: readonly string[] = Object.freeze(Object.keys(_SECURE_HEADERS))

/** The headers every answer of the panel carries (HSTS exactly when the cookie is Secure). Shared and frozen: copy to change. */
export function securityHeadersFor(event: H3Event): Readonly<Record<string, string>> {
  return isSecureContextFor(event) ? _SECURE_HEADERS : _BASE_HEADERS
}

/**
 * The session cookie's name on this request: `panel_session`, but `__Host-panel_session` in strict
 * session mode over HTTPS (browsers accept that name only host-only, Secure and on path /, so a
 * sibling host cannot plant one; setting auth.strict_sessions, docs/auth.md).
 */
export function sessionCookieNameFor(event: H3Event): string {
  return strictSessionsOn() && isSecureContextFor(event) ? HOST_SESSION_COOKIE : SESSION_COOKIE
}

/** The session token the request carries, under the name of the current mode only. */
export function readSessionCookie(event: H3Event): string | undefined {
  return getCookie(event, sessionCookieNameFor(event))
}

export function setSessionCookie(event: H3Event, token: string): void {
  if (strictSessionsOn()) {
    // Host-only on the panel's name, sent by no other site; a parent-domain copy left from the default mode goes.
    _clearParentDomainCookie(event)
    setCookie(event, sessionCookieNameFor(event), token, {
      path: '/',
      httpOnly: true,
      sameSite: 'strict',
      secure: isSecureContextFor(event),
      maxAge: Math.floor(SESSION_LIFETIME_MS / 1000),
    })
    return
  }
  setCookie(event, SESSION_COOKIE, token, {
    domain: cookieDomainFor(getConfig().domain),
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: isSecureContextFor(event),
    maxAge: Math.floor(SESSION_LIFETIME_MS / 1000),
  })
}

export function clearSessionCookie(event: H3Event): void {
  if (strictSessionsOn()) {
    _clearParentDomainCookie(event)
    deleteCookie(event, sessionCookieNameFor(event), { path: '/', httpOnly: true, sameSite: 'strict', secure: isSecureContextFor(event) })
    return
  }
  deleteCookie(event, SESSION_COOKIE, {
    domain: cookieDomainFor(getConfig().domain),
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: isSecureContextFor(event),
  })
}

function _clearParentDomainCookie(event: H3Event): void {
  const domain = cookieDomainFor(getConfig().domain)
  if (domain) deleteCookie(event, SESSION_COOKIE, { domain, path: '/', httpOnly: true, sameSite: 'lax', secure: isSecureContextFor(event) })
}

/** The short-lived cookie of a password login waiting for its TOTP code (no Domain: the panel's host only). */
export const TOTP_PENDING_COOKIE = 'panel_totp_pending'
export const TOTP_PENDING_LIFETIME_MS = 5 * 60_000
const _TOTP_PENDING_PATH = '/api/auth/login'

export function setTotpPendingCookie(event: H3Event, token: string): void {
  setCookie(event, TOTP_PENDING_COOKIE, token, {
    path: _TOTP_PENDING_PATH,
    httpOnly: true,
    sameSite: 'strict',
    secure: isSecureContextFor(event),
    maxAge: TOTP_PENDING_LIFETIME_MS / 1000,
  })
}

export function clearTotpPendingCookie(event: H3Event): void {
  deleteCookie(event, TOTP_PENDING_COOKIE, {
    path: _TOTP_PENDING_PATH,
    httpOnly: true,
    sameSite: 'strict',
    secure: isSecureContextFor(event),
  })
}
