import type { H3Event } from 'h3'
import { getConfig } from '../core/config'
import { forbidden, unauthorized } from '../core/errors'
import { mutationSourceRefusal } from './origin'
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
