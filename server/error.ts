import { defineNitroErrorHandler } from 'nitropack/runtime'
import { send, setResponseHeader, setResponseStatus } from 'h3'
import { discardUnreadBody } from './utils/core/body'
import { logger } from './utils/core/log'
import { redactSecrets } from './utils/core/redact'

// Every error leaves the process as {"error": "..."}. Unexpected errors are logged
// with their context and answered with a generic text: internals never leak.
export default defineNitroErrorHandler(async (error, event) => {
  let status = error.statusCode || 500
  let message: string
  if (error.unhandled || (status >= 500 && !error.statusMessage)) {
    status = error.unhandled ? 500 : status
    logger.error(`[http] ${event.method} ${event.path} failed:`, error.cause ?? error)
    message = 'internal error'
  } else {
    message = error.message || error.statusMessage || 'error'
    // A 5xx may carry the proxy's or the engine's text: redacted at its source, checked once more here.
    if (status >= 500) message = await redactSecrets(message)
  }
  if (status === 404 && /Cannot find any route/.test(message)) message = `no route for ${event.method} ${event.path.split('?')[0]!}`
  if (status === 405) {
    // The API's 405s name what the path serves (middleware/30-routes.ts); elsewhere only the UI's GET exists.
    const allow = ((error.data as any)?.allow as string | undefined) ?? 'GET, HEAD'
    setResponseHeader(event, 'allow', allow)
    message = `method ${event.method} is not allowed on ${event.path.split('?')[0]}; this path serves ${allow}`
  }
  if (status === 400 && /Invalid JSON body/i.test(message)) message = 'request body is not valid JSON'
  const retryAfter = (error.data as any)?.retryAfterSeconds
  if (typeof retryAfter === 'number') setResponseHeader(event, 'retry-after', Math.max(1, Math.ceil(retryAfter)))
  // A refusal that came before the body was read: the client may still be sending it (a 413 closes instead).
  if (status !== 413) await discardUnreadBody(event)
  setResponseStatus(event, status)
  setResponseHeader(event, 'content-type', 'application/json')
  setResponseHeader(event, 'cache-control', 'no-store')
  return send(event, JSON.stringify({ error: message }))
})
