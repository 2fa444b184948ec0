import { cookieDomainFor } from './cookie'

/**
 * The one gate for every redirect target the panel follows (login `rd`,
 * ForwardAuth, OIDC). Refuses backslashes, control characters and URLs off the
 * panel's domain (its parent domain and that domain's subdomains are on-domain).
 */
export function sanitizeRedirectTarget(target: string | null | undefined, panelDomain: string, fallback = '/'): string {
  if (!target || target.length > 4096) return fallback
  if (target.includes('\\') || /[\u0000-\u001f\u007f]/.test(target)) return fallback
  if (target.startsWith('/') && !target.startsWith('//')) return target
  let url: URL
  try {
    url = new URL(target)
  } catch {
    return fallback
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return fallback
  if (url.username || url.password) return fallback
  return isOnPanelDomain(url.hostname, panelDomain) ? url.toString() : fallback
}

export function isOnPanelDomain(hostname: string, panelDomain: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '')
  if (host === panelDomain) return true
  const parent = cookieDomainFor(panelDomain)
  return parent !== undefined && (host === parent || host.endsWith(`.${parent}`))
}
