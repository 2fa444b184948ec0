import { createError, type H3Error } from 'h3'

// The closed vocabulary of errors. Every message tells the operator what to fix;
// the one error handler (server/error.ts) turns any of them into {"error": "..."}.

function _httpError(statusCode: number, message: string, data?: Record<string, unknown>): H3Error {
  return createError({ statusCode, statusMessage: _reasonPhrase(statusCode), message, data })
}

function _reasonPhrase(status: number): string {
  return (
    (
      {
        400: 'Bad Request',
        401: 'Unauthorized',
        403: 'Forbidden',
        404: 'Not Found',
        405: 'Method Not Allowed',
        409: 'Conflict',
        413: 'Payload Too Large',
        415: 'Unsupported Media Type',
        429: 'Too Many Requests',
        500: 'Internal Server Error',
        502: 'Bad Gateway',
        503: 'Service Unavailable',
      } as Record<number, string>
    )[status] ?? 'Error'
  )
}

export const badRequest = (whatToFix: string) => _httpError(400, whatToFix)
export const unauthorized = (why = 'authentication required: log in first') => _httpError(401, why)
export const forbidden = (why: string) => _httpError(403, why)
export const notFound = (kind: string, id?: string | number) =>
  _httpError(404, id === undefined ? `${kind} not found` : `${kind} ${id} not found`)
/** A path that serves nothing (an unknown or retired route, a missing file): the message says what to use instead. */
export const pathNotFound = (why: string) => _httpError(404, why)
export const noRoute = (method: string, path: string) => _httpError(404, `no route for ${method} ${path}`)
export const methodNotAllowed = (method: string, path: string, allow: string) =>
  _httpError(405, `method ${method} is not allowed on ${path}; this path serves ${allow}`, { allow })
export const conflict = (why: string) => _httpError(409, why)
export const payloadTooLarge = (limitBytes: number) => _httpError(413, `request body too large: the limit is ${limitBytes} bytes`)
/** A body of another type than the route reads (a JSON route sent text/plain, or no Content-Type). */
export const unsupportedMediaType = (whatToFix: string) => _httpError(415, whatToFix)
export const tooManyRequests = (why: string, retryAfterSeconds: number) => _httpError(429, why, { retryAfterSeconds })
export const proxyRejected = (proxyText: string) => _httpError(502, `proxy rejected configuration: ${proxyText}`)
/** A component answered, but with an error (its text already redacted by the caller). */
export const upstreamFailed = (what: string) => _httpError(502, what)
/** An operation of the panel's own failed (a backup that could not be written); the message says which and why. */
export const operationFailed = (what: string) => _httpError(500, what)
export const upstreamUnavailable = (component: string, detail: string) => _httpError(503, `${component} unavailable: ${detail}`)

/** libSQL constraint errors arrive wrapped by drizzle; this finds the driver's code wherever it sits. */
export function sqliteErrorCode(err: unknown): string | undefined {
  let e: any = err
  for (let depth = 0; e && depth < 4; depth++, e = e.cause) {
    if (typeof e.extendedCode === 'string') return e.extendedCode
    if (typeof e.code === 'string' && e.code.startsWith('SQLITE_')) return e.code
  }
  return undefined
}

export function isUniqueViolation(err: unknown): boolean {
  const code = sqliteErrorCode(err)
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}
