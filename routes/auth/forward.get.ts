import { defineEventHandler, getCookie, getRequestHeader, sendRedirect, setResponseHeaders } from 'h3'
import { SESSION_COOKIE, resolveSession } from '~/server/utils/auth/sessions'
import { loginRedirectForForwardAuth } from '~/server/utils/auth/forward-auth'
import { FORWARD_AUTH_PROBE_HEADER, noteForwardAuthProbe } from '~/server/utils/proxy/forward-auth-check'

// The proxy's sub-request: 200 + X-Auth-* for a valid session, else 302 to login.
export default defineEventHandler(async (event) => {
  noteForwardAuthProbe(getRequestHeader(event, FORWARD_AUTH_PROBE_HEADER))
  const session = await resolveSession(getCookie(event, SESSION_COOKIE))
  if (session) {
    const { user } = session
    setResponseHeaders(event, {
      'x-auth-user': user.email,
      'x-auth-email': user.email,
      'x-auth-name': user.name || user.email,
      'x-auth-provider': user.provider,
      'cache-control': 'no-store',
    })
    return ''
  }
  return sendRedirect(
    event,
    loginRedirectForForwardAuth({
      proto: getRequestHeader(event, 'x-forwarded-proto'),
      host: getRequestHeader(event, 'x-forwarded-host'),
      uri: getRequestHeader(event, 'x-forwarded-uri'),
    }),
    302,
  )
})
