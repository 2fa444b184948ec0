import { defineEventHandler } from 'h3'
import { resolveSession } from '../utils/auth/sessions'
import { readSessionCookie } from '../utils/auth/cookie'
import { assertPanelOrigin, isMutation, isPublicApiPath, isSelfServicePath } from '../utils/auth/access'
import { assertNoTokenInQuery, bearerSecretOf, resolveApiToken } from '../utils/auth/api-tokens'
import { clientIpOf, noteClientAddress } from '../utils/core/request'
import { forbidden, unauthorized } from '../utils/core/errors'

// /api/* needs a session (except the login and setup paths); viewers may only
// read; only the panel's own pages and scripts may mutate anything, login and
// setup included (a login CSRF signs the victim in as someone else).
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
  if (isPublicApiPath(path)) return
  if (!session) throw unauthorized()
  if (session.apiToken && path.startsWith('/api/auth/') && path !== '/api/auth/session')
    throw forbidden(
      'TOTP and logout need a browser session: an API token cannot change the second factor, and it ends by being revoked (DELETE /api/tokens/{id})',
    )
  if (isMutation(event) && session.user.role !== 'admin' && (session.apiToken || !isSelfServicePath(path)))
    throw forbidden(
      session.apiToken
        ? `API token "${session.apiToken.name}" acts with read scope: it cannot change anything`
        : 'viewers cannot change anything: ask an admin',
    )
})
