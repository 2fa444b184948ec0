import { defineEventHandler, getCookie } from 'h3'
import { SESSION_COOKIE, resolveSession } from '../utils/auth/sessions'
import { assertSameSiteOrigin, isMutation, isPublicApiPath } from '../utils/auth/access'
import { forbidden, unauthorized } from '../utils/core/errors'

// /api/* needs a session (except the login and setup paths); viewers may only
// read; a browser Origin from another site may not mutate anything.
export default defineEventHandler(async (event) => {
  const path = event.path.split('?')[0]!
  if (!path.startsWith('/api/') && path !== '/api') return
  if (isMutation(event)) assertSameSiteOrigin(event)
  const session = await resolveSession(getCookie(event, SESSION_COOKIE))
  if (session) event.context.auth = session
  if (isPublicApiPath(path)) return
  if (!session) throw unauthorized()
  if (isMutation(event) && session.user.role !== 'admin' && !path.startsWith('/api/auth/'))
    throw forbidden('viewers cannot change anything: ask an admin')
})
