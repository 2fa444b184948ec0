import { buildClientAddressMatcher } from './lan-gate'
import { buildDefaultRoute } from './path-rules'
import type { HostSnapshot, Json, ProxySnapshot, Route, TargetGroupSnapshot } from './types'

// The end of a host's chain by its kind (docs/hosts.md, "Host kinds"): a proxy
// host forwards to its target group; the other kinds answer themselves, after
// the same gates (LAN gate, access list, bouncer, rate limit, WAF, ForwardAuth).

/**
 * The operator's text as Caddy's replacer reads it: every brace escaped, so
 * nothing they typed can become a placeholder (`{file./etc/passwd}`, a header of
 * the request, ...). Caddy turns `\{` back into `{` when it answers.
 */
export function escapePlaceholders(text: string): string {
  return text.replace(/[{}]/g, (b) => `\\${b}`)
}

/**
 * The Location of a redirect host. A bare host name keeps the request's scheme;
 * with keep-path the request's path and query (`{http.request.uri}`, the only
 * placeholder in it, added here) follow the target's own path.
 */
export function redirectLocation(host: HostSnapshot): string {
  const target = host.redirect_to ?? ''
  const absolute = /^https?:\/\//i.test(target)
  const base = absolute ? escapePlaceholders(target) : `{http.request.scheme}://${escapePlaceholders(target)}`
  if (!host.redirect_keep_path) return absolute ? base : `${base}/`
  return `${base.replace(/\/+$/, '')}{http.request.uri}`
}

function _page(status: number, contentType: string, body: string, extra: Record<string, string[]> = {}): Json {
  return {
    handler: 'static_response',
    status_code: status,
    headers: { 'Content-Type': [contentType], ...extra },
    body: escapePlaceholders(body),
  }
}

/**
 * The routes that end the chain of a host that is not a proxy host. A maintenance
 * host first sends its bypass sources to the target group (when it has one), and
 * answers everyone else 503 with Retry-After.
 */
export function buildKindTerminalRoutes(
  host: HostSnapshot,
  group: TargetGroupSnapshot | undefined,
  clientIp: ProxySnapshot['clientIp'],
  warnings: string[],
): Route[] {
  switch (host.kind) {
    case 'redirect':
      return [
        {
          handle: [{ handler: 'static_response', status_code: host.redirect_status, headers: { Location: [redirectLocation(host)] } }],
        },
      ]
    case 'static':
      return [{ handle: [_page(host.static_status, host.static_content_type, host.static_body)] }]
    case 'maintenance': {
      const routes: Route[] = []
      if (host.maintenance_bypass.length) {
        if (group)
          routes.push({
            match: [buildClientAddressMatcher(host.maintenance_bypass, clientIp)],
            handle: buildDefaultRoute(group, warnings).handle,
            terminal: true,
          } as Route)
        else warnings.push(`host ${host.domain}: target group ${host.target_group_id} is missing; maintenance bypass not applied`)
      }
      routes.push({
        handle: [
          _page(503, host.maintenance_content_type, host.maintenance_body, {
            'Retry-After': [String(host.maintenance_retry_after)],
          }),
        ],
      })
      return routes
    }
    default:
      return []
  }
}
