import { defineEventHandler, getCookie, getRequestHeader } from 'h3'
import { answerForwardAuth, forwardAuthCookieName, forwardAuthRequestOf, sendForwardAuthAnswer } from '~/server/utils/auth/forward-auth'

// The proxy's sub-request: 200 + X-Auth-* for a valid session, else 302 to login.
// The proxy's own GETs are served before the app by plugins/05-forward-auth.ts,
// with the same functions; this route is what the app has for the path (the
// OpenAPI document, a panel still booting, the fast path's fallback on an error).
export default defineEventHandler(async (event) => {
  const answer = await answerForwardAuth(
    forwardAuthRequestOf((name) => getRequestHeader(event, name), getCookie(event, forwardAuthCookieName())),
  )
  sendForwardAuthAnswer(event, answer)
})
