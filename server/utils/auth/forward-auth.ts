import { getConfig } from '../core/config'
import { sanitizeRedirectTarget } from './redirect'

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
