import { getRequestHeader, type H3Event } from 'h3'
import { getConfig } from '../core/config'
import { forbidden, unauthorized } from '../core/errors'
import { isOnPanelDomain } from './redirect'
import type { ResolvedSession } from './sessions'

const _PUBLIC_API = [/^\/api\/setup$/, /^\/api\/auth\/login(\/.*)?$/, /^\/api\/auth\/providers$/, /^\/api\/auth\/oidc\/.+$/]

export function isPublicApiPath(path: string): boolean {
  return _PUBLIC_API.some((re) => re.test(path))
}

/**
 * Paths where a viewer may mutate: their own account (logout, TOTP) and their own
 * API tokens (read scope only; revoking only their own). The routes enforce the rest.
 */
export function isSelfServicePath(path: string): boolean {
  return path.startsWith('/api/auth/') || path === '/api/tokens' || path.startsWith('/api/tokens/')
}

export function isMutation(event: H3Event): boolean {
  return !['GET', 'HEAD', 'OPTIONS'].includes(event.method)
}

/**
 * Refuses a mutation whose browser Origin is another site. Scripts send no
 * Origin and pass with the cookie alone; the panel's own pages send its origin.
 */
export function assertSameSiteOrigin(event: H3Event): void {
  const origin = getRequestHeader(event, 'origin')
  if (!origin) return
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    throw forbidden('cross-site request refused: bad Origin header')
  }
  const host = getRequestHeader(event, 'host')?.toLowerCase()
  if (host && url.host.toLowerCase() === host) return
  if (isOnPanelDomain(url.hostname, getConfig().domain)) return
  throw forbidden(`cross-site request refused: Origin ${url.origin} is not the panel's`)
}

export function requireSession(event: H3Event): ResolvedSession {
  const auth = event.context.auth
  if (!auth) throw unauthorized()
  return auth
}

export function requireAdmin(event: H3Event): ResolvedSession {
  const auth = requireSession(event)
  if (auth.user.role !== 'admin') throw forbidden('this needs the admin role')
  return auth
}
