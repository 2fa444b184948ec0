import { buildClientAddressMatcher } from './lan-gate'
import type { AccessListSnapshot, Json, ProxySnapshot, Route } from './types'

export const ACCESS_DENIED_BODY = 'Access denied\n'

/** Host id -> its access list (a host has at most one). */
export function mapAccessListsByHost(lists: AccessListSnapshot[] | undefined): Map<number, AccessListSnapshot> {
  const byHost = new Map<number, AccessListSnapshot>()
  for (const list of lists ?? []) for (const hostId of list.host_ids) byHost.set(hostId, list)
  return byHost
}

function _deny(match: Json): Route {
  return { match: [match], handle: [{ handler: 'static_response', status_code: 403, body: ACCESS_DENIED_BODY }], terminal: true }
}

/**
 * The IP rules as routes refusing with 403, read top to bottom: the first rule
 * whose source matches decides. Caddy has no "stop here and go on" for a route
 * (a terminal route ends the request), so an allow rule works by exclusion: each
 * run of consecutive deny rules matches its sources minus every source allowed
 * above it, and a deny default matches everything not allowed. An allowed source
 * so falls through to the rest of the host's chain. Empty for a list without
 * rules and an allow default.
 */
export function buildAccessListIpRoutes(list: AccessListSnapshot, clientIp: ProxySnapshot['clientIp']): Route[] {
  const routes: Route[] = []
  const allowedAbove: string[] = []
  const _exceptAllowed = (match: Json): Json =>
    allowedAbove.length ? { ...match, not: [buildClientAddressMatcher([...allowedAbove], clientIp)] } : match
  let denyRun: string[] = []
  const flush = () => {
    if (denyRun.length) routes.push(_deny(_exceptAllowed(buildClientAddressMatcher(denyRun, clientIp))))
    denyRun = []
  }
  for (const rule of list.ip_rules) {
    if (rule.action === 'deny') denyRun.push(rule.source)
    else {
      flush()
      allowedAbove.push(rule.source)
    }
  }
  flush()
  if (list.default_action === 'deny') {
    routes.push(
      allowedAbove.length
        ? _deny({ not: [buildClientAddressMatcher(allowedAbove, clientIp)] })
        : { handle: [{ handler: 'static_response', status_code: 403, body: ACCESS_DENIED_BODY }], terminal: true },
    )
  }
  return routes
}

/**
 * Caddy's `authentication` handler with `http_basic`: 401 with a
 * WWW-Authenticate challenge unless the request carries a listed user and its
 * password. The stored bcrypt hash is given base64-encoded, which every Caddy
 * 2 release reads (2.6.2 requires it; 2.11 also takes the bare `$2b$` form).
 * `hash_cache` keeps the outcome of a compare for the same hash and password,
 * so a logged-in browser does not cost one bcrypt run per request.
 */
export function buildBasicAuthHandler(list: AccessListSnapshot): Json | null {
  if (!list.users.length) return null
  const accounts = [...list.users]
    .sort((a, b) => a.username.localeCompare(b.username))
    .map((u) => ({ username: u.username, password: Buffer.from(u.hash, 'utf8').toString('base64') }))
  return {
    handler: 'authentication',
    providers: { http_basic: { accounts, hash: { algorithm: 'bcrypt' }, realm: list.realm, hash_cache: {} } },
  }
}
