import type { H3Event } from 'h3'
import { getConfig } from '../core/config'
import { forbidden, unauthorized } from '../core/errors'
import type { Access } from '../openapi/registry'
import type { RouteMatch } from '../openapi/route-table'
import { mutationSourceRefusal } from './origin'
import type { ResolvedSession } from './sessions'

export function isMutation(event: H3Event): boolean {
  return !['GET', 'HEAD', 'OPTIONS'].includes(event.method)
}

/**
 * Refuses a browser mutation that another page started (the rule and its reasons:
 * ./origin.ts). Scripts send neither Origin nor Sec-Fetch-Site and pass; the
 * panel's own pages send its origin. Requests with an API token never get here.
 */
export function assertPanelOrigin(event: H3Event): void {
  // Node's own headers: h3's getRequestHeader copies them all on every call.
  const headers = event.node.req.headers
  const config = getConfig()
  const refusal = mutationSourceRefusal(
    { origin: _one(headers.origin), secFetchSite: _one(headers['sec-fetch-site']), host: headers.host },
    { publicUrl: config.publicUrl, domain: config.domain },
  )
  if (refusal) throw forbidden(refusal)
}

function _one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value
}

/**
 * The header that the panel's UI sends with a multipart upload and that an HTML
 * form cannot send: a multipart body is one a page of another origin may post
 * without asking first, so with the session cookie it needs this as well as the
 * origin rule. Scripts add it (curl -H 'X-Panel-Request: 1'); API tokens need nothing.
 */
export const PANEL_REQUEST_HEADER = 'x-panel-request'

export function assertUploadFromPanelClient(event: H3Event): void {
  if (event.context.auth?.apiToken) return
  if (_one(event.node.req.headers[PANEL_REQUEST_HEADER])?.trim()) return
  throw forbidden(
    'an upload with the session cookie needs the header X-Panel-Request: 1 (the web UI sends it; with curl add -H "X-Panel-Request: 1"), or use an API token',
  )
}

/**
 * Enforces the access the matched operation declares (server/utils/openapi/registry.ts, Access).
 * A request no operation serves gets the rule its path and method would have, so that who may
 * learn "404" or "405" is who could call something there; the route layer (30-routes) answers it.
 */
export function assertDeclaredAccess(event: H3Event, match: RouteMatch, session: ResolvedSession | undefined): void {
  const access = _accessOf(match, isMutation(event))
  if (access === 'public' || access === 'proxy') return
  if (!session) throw unauthorized()
  if (access === 'session') return
  const token = session.apiToken
  const admin = session.user.role === 'admin'
  if (access === 'browser') {
    if (token)
      throw forbidden(
        'TOTP, passkeys and logout need a browser session: an API token cannot change how its user signs in, and it ends by being revoked (DELETE /api/tokens/{id})',
      )
    return
  }
  if (admin || (access === 'own' && !token)) return
  if (access === 'admin' && !isMutation(event)) throw forbidden('this needs the admin role')
  throw forbidden(
    token ? `API token "${token.name}" acts with read scope: it cannot change anything` : 'viewers cannot change anything: ask an admin',
  )
}

// From the loosest to the strictest (`session` is never declared on a change).
const _LOOSEST_CHANGE_FIRST: Access[] = ['browser', 'own', 'admin']

function _accessOf(match: RouteMatch, mutation: boolean): Access {
  if (match.kind === 'documented' || match.kind === 'bad-parameter') return match.access
  // A public path tells anyone which methods it serves (405). Otherwise any session may learn
  // that a read is not there; a change nothing declares takes the loosest rule of the changes
  // the path serves, and needs an admin where it serves none (an unknown path).
  const served = match.kind === 'method-not-allowed' ? match.served : []
  if (served.includes('public')) return 'public'
  if (!mutation) return 'session'
  return _LOOSEST_CHANGE_FIRST.find((a) => served.includes(a)) ?? 'admin'
}

export function requireSession(event: H3Event): ResolvedSession {
  const auth = event.context.auth
  if (!auth) throw unauthorized()
  return auth
}
