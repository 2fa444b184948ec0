import { defineEventHandler, getRequestHeader, setResponseHeaders } from 'h3'
import { whenBootReady } from '../utils/core/boot'
import { upstreamUnavailable, payloadTooLarge } from '../utils/core/errors'
import { JSON_BODY_LIMIT_BYTES } from '../utils/core/validate'
import { NPM_DATABASE_LIMIT_BYTES, NPM_IMPORT_PATH } from '../utils/import/npm-limits'
import { securityHeadersFor } from '../utils/auth/cookie'

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
  // An uploaded nginx-proxy-manager database is the one body allowed past 1 MiB.
  const limit = event.path === NPM_IMPORT_PATH ? NPM_DATABASE_LIMIT_BYTES : JSON_BODY_LIMIT_BYTES
  if (declared > limit) throw payloadTooLarge(limit)
  setResponseHeaders(event, securityHeadersFor(event))
})
