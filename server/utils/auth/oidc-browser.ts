import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { deleteCookie, getCookie, setCookie, type H3Event } from 'h3'
import { isSecureContextFor } from './cookie'

// Binds an OIDC login to the browser that started it. The `state` alone proves only that
// somebody started a login: without this cookie, an attacker could start one, sign in at the
// provider as themselves, and hand the callback URL to a victim, whose browser would then be
// signed in to the attacker's account (login CSRF) and lose its own session. The cookie holds
// a random value whose hash the pending login keeps; the callback requires both to match.
//
// Host-only and, wherever the cookie can be Secure, named with the `__Host-` prefix: a sibling
// site under the parent domain can then neither read it nor plant its own.

const _LIFETIME_SECONDS = 10 * 60 // the pending state's own lifetime
const _SECURE_NAME = '__Host-panel_oidc'
const _PLAIN_NAME = 'panel_oidc'

function _cookieName(secure: boolean): string {
  return secure ? _SECURE_NAME : _PLAIN_NAME
}

export function hashBrowserBinding(binding: string): string {
  return createHash('sha256').update(binding).digest('base64url')
}

/** A new binding for a login this browser starts: the cookie is set, the hash goes into the pending state. */
export function bindLoginToBrowser(event: H3Event): { bindingHash: string } {
  const binding = randomBytes(32).toString('base64url')
  const secure = isSecureContextFor(event)
  // SameSite=Lax: the callback is a top-level GET navigation from the provider's site.
  setCookie(event, _cookieName(secure), binding, { path: '/', httpOnly: true, sameSite: 'lax', secure, maxAge: _LIFETIME_SECONDS })
  return { bindingHash: hashBrowserBinding(binding) }
}

/** The binding this browser carries, if any; the cookie is cleared at once (a callback uses it once). */
export function takeBrowserBinding(event: H3Event): string | undefined {
  const secure = isSecureContextFor(event)
  const name = _cookieName(secure)
  const binding = getCookie(event, name)
  if (binding !== undefined) deleteCookie(event, name, { path: '/', httpOnly: true, sameSite: 'lax', secure })
  return binding
}

/** Whether `binding` (from the cookie) is the one whose hash the pending login kept; constant time. */
export function browserBindingMatches(binding: string | undefined, bindingHash: string): boolean {
  if (!binding || binding.length > 256) return false
  const a = Buffer.from(hashBrowserBinding(binding))
  const b = Buffer.from(bindingHash)
  return a.length === b.length && timingSafeEqual(a, b)
}
