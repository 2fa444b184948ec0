import { defineEventHandler, getRequestHeader, setResponseHeaders } from 'h3'
import { whenBootReady } from '../utils/core/boot'
import { upstreamUnavailable } from '../utils/core/errors'
import { bodyLimitFor, bodyTooLarge } from '../utils/core/body'
import { securityHeadersFor } from '../utils/auth/cookie'

// Every request waits for boot (database open, migrations applied), is refused
// early when its declared body is over the route's limit, and gets the security
// headers. A body without a declared length is counted as it is read
// (server/utils/core/body.ts).
export default defineEventHandler(async (event) => {
  if (event.path === '/healthz') return
  try {
    await whenBootReady()
  } catch {
    throw upstreamUnavailable('panel', 'start-up failed; see the panel log')
  }
  const declared = Number(getRequestHeader(event, 'content-length') ?? 0)
  const limit = bodyLimitFor(event.path.split('?')[0]!)
  if (declared > limit) throw bodyTooLarge(event, limit)
  setResponseHeaders(event, securityHeadersFor(event))
})
