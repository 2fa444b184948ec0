import type { H3Event } from 'h3'
import { getCookie } from 'h3'
import { defineNitroPlugin } from 'nitropack/runtime'
import {
  answerForwardAuth,
  answerForwardAuthFromCache,
  forwardAuthCookieName,
  forwardAuthRequestOf,
  sendForwardAuthAnswer,
} from '../utils/auth/forward-auth'
import { isBootReady } from '../utils/core/boot'

// The proxy asks /auth/forward before every request of a protected host, so it
// is the panel's hottest path (docs/performance.md, budget and ratio to a bare
// server). Nitro's app wraps each request in hooks, four middlewares, the route
// table and the router, and those cost far more than the answer itself: the
// proxy's exact request (GET /auth/forward, no query) is answered here, before
// the app, with the same functions the route uses (the route table knows the
// path; no body is read).
// Anything else, or a panel still booting, goes through the app as before.
export default defineNitroPlugin((nitroApp) => {
  const app = nitroApp.h3App
  const throughApp = app.handler
  app.handler = ((event: H3Event) => {
    if (event.path !== '/auth/forward' || event.method !== 'GET' || !isBootReady()) return throughApp(event)
    const request = forwardAuthRequestOf((name) => _header(event, name), getCookie(event, forwardAuthCookieName()))
    // A session the cache holds (every check after a user's first) is answered without a promise.
    const cached = answerForwardAuthFromCache(request)
    if (cached) return sendForwardAuthAnswer(event, cached)
    return answerForwardAuth(request).then(
      (answer) => sendForwardAuthAnswer(event, answer),
      () => throughApp(event),
    )
  }) as typeof app.handler
})

// h3's getRequestHeader copies every header on each call: the four this path reads come straight from Node.
function _header(event: H3Event, name: string): string | undefined {
  const value = event.node.req.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}
