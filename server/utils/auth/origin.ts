import { isIP } from 'node:net'
import { isLoopbackHostname } from './cookie'

// Who may ask the panel to change something (issue 33, item 1). A browser
// attaches the SameSite=Lax session cookie to requests from every *same-site*
// page, and the cookie's Domain is the parent domain, so "same site" would let
// any sibling host (an app behind the proxy, a user-content host, a taken-over
// CNAME) drive the panel. Only the panel's own *origin* may: the one of
// PANEL_PUBLIC_URL, or the request's own Host when that Host cannot be a name an
// attacker points at the panel (DNS rebinding).

/** What the decision reads from a request: its headers, lower-case names, as sent. */
export interface MutationSource {
  origin?: string
  secFetchSite?: string
  host?: string
}

/** What the decision reads from the configuration. */
export interface PanelIdentity {
  /** PANEL_PUBLIC_URL (default https://<PANEL_DOMAIN>). */
  publicUrl: string
  /** PANEL_DOMAIN. */
  domain: string
}

const _originCache = new Map<string, string | null>()

/** The origin (scheme://host[:port], default port left out) of PANEL_PUBLIC_URL; null if it does not parse. */
export function panelOriginOf(publicUrl: string): string | null {
  let cached = _originCache.get(publicUrl)
  if (cached === undefined) {
    try {
      cached = new URL(publicUrl).origin
    } catch {
      cached = null
    }
    _originCache.set(publicUrl, cached)
  }
  return cached
}

/** The host name of a Host header value ("[::1]:3000" gives "[::1]", "a.test:80" gives "a.test"). */
function _hostnameOfHost(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1)
  return host.split(':')[0]!
}

/**
 * A Host no DNS answer can put in the browser's address bar for another site's page:
 * an IP literal, a loopback name (browsers resolve localhost and *.localhost
 * themselves), or exactly PANEL_DOMAIN (the operator's own name).
 */
export function isTrustedHostName(hostname: string, panelDomain: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '')
  if (h === panelDomain.toLowerCase()) return true
  if (isLoopbackHostname(h)) return true
  return isIP(h.replace(/^\[|\]$/g, '')) !== 0
}

/**
 * Null when a browser mutation may proceed, else why it is refused (the 403's message).
 *
 * - With an Origin: it must be the panel's own origin, that of PANEL_PUBLIC_URL, or
 *   http(s)://<the request's Host> when that Host is trusted (isTrustedHostName), so
 *   that a panel reached by IP, on localhost or on PANEL_DOMAIN with another scheme or
 *   port keeps working, and a rebinding name never passes.
 * - Sec-Fetch-Site, when sent, must be `same-origin` or `none`, Origin or not: a
 *   browser says `same-site` or `cross-site` for a request another page started.
 * - Neither header: a script (curl, a CI job); it passes.
 */
export function mutationSourceRefusal(src: MutationSource, panel: PanelIdentity): string | null {
  const site = src.secFetchSite?.trim().toLowerCase()
  if (site && site !== 'same-origin' && site !== 'none')
    return `cross-site request refused: the browser marked it Sec-Fetch-Site: ${site.slice(0, 20)}; use the panel's own pages at ${panelOriginOf(panel.publicUrl) ?? panel.publicUrl}`
  if (src.origin === undefined) return null
  let url: URL
  try {
    url = new URL(src.origin)
  } catch {
    return 'cross-site request refused: bad Origin header'
  }
  // "null" (a sandboxed frame, a file: page, a redirect across origins) parses to the opaque origin "null".
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'cross-site request refused: Origin is not an http(s) origin'
  if (url.origin === panelOriginOf(panel.publicUrl)) return null
  const host = src.host?.toLowerCase()
  if (host && url.host === host && isTrustedHostName(_hostnameOfHost(host), panel.domain)) return null
  return `cross-site request refused: Origin ${url.origin} is not the panel's own origin (${panelOriginOf(panel.publicUrl) ?? panel.publicUrl}); set PANEL_PUBLIC_URL to the address browsers use for the panel`
}
