import { defineEventHandler } from 'h3'
import { resolveSession } from '../utils/auth/sessions'
import { readSessionCookie } from '../utils/auth/cookie'
import { assertDeclaredAccess, assertPanelOrigin, isMutation } from '../utils/auth/access'
import { assertNoTokenInQuery, bearerSecretOf, resolveApiToken } from '../utils/auth/api-tokens'
import { clientIpOf, noteClientAddress } from '../utils/core/request'
import { routeMatchOf } from '../utils/openapi/route-table'

// /api/* is allowed to whom its operation declares (the `access` of its OpenAPI entry,
// server/utils/openapi/areas/*.ts); only the panel's own pages and scripts may mutate
// anything, login and setup included (a login CSRF signs the victim in as someone else).
export default defineEventHandler(async (event) => {
  const path = event.path.split('?')[0]!
  if (!path.startsWith('/api/') && path !== '/api') return
  noteClientAddress(event)
  // API tokens (issue 17): a Bearer header replaces the cookie; never a query string.
  const bearer = bearerSecretOf(event)
  // A browser never attaches a Bearer header by itself, so a request carrying one is not
  // forged by another page; an invalid one is refused (401) by resolveApiToken below.
  if (bearer === undefined && isMutation(event)) assertPanelOrigin(event)
  assertNoTokenInQuery(event)
  const session = bearer !== undefined ? await resolveApiToken(bearer, clientIpOf(event)) : await resolveSession(readSessionCookie(event))
  if (session) event.context.auth = session
  assertDeclaredAccess(event, routeMatchOf(event), session ?? undefined)
})
