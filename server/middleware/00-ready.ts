import { defineEventHandler, getRequestHeader, setResponseHeader } from 'h3'
import { whenBootReady } from '../utils/core/boot'
import { upstreamUnavailable, payloadTooLarge } from '../utils/core/errors'
import { JSON_BODY_LIMIT_BYTES } from '../utils/core/validate'
import { isSecureContextFor } from '../utils/auth/cookie'

// Every request waits for boot (database open, migrations applied), is refused
// early when its declared body is over the limit, and gets the security headers.
export default defineEventHandler(async (event) => {
  if (event.path === '/healthz') return
  try {
    await whenBootReady()
  } catch {
    throw upstreamUnavailable('panel', 'start-up failed; see the panel log')
  }
  const declared = Number(getRequestHeader(event, 'content-length') ?? 0)
  if (declared > JSON_BODY_LIMIT_BYTES) throw payloadTooLarge(JSON_BODY_LIMIT_BYTES)
  setResponseHeader(event, 'x-content-type-options', 'nosniff')
  setResponseHeader(event, 'referrer-policy', 'same-origin')
  if (isSecureContextFor(event)) setResponseHeader(event, 'strict-transport-security', 'max-age=31536000')
})
