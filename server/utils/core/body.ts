import { readMultipartFormData, type H3Event, type MultiPartData } from 'h3'
import { NPM_DATABASE_LIMIT_BYTES, NPM_IMPORT_PATH } from '../import/npm-limits'
import { BACKUP_UPLOAD_LIMIT_BYTES, BACKUP_UPLOAD_PATH } from '../ops/backup-limits'
import { badRequest, payloadTooLarge } from './errors'

// The one reader of request bodies. h3's readRawBody buffers whatever arrives
// and a size check after it comes too late: a chunked body has no length to
// check first, so an anonymous client could make the panel hold gigabytes.
// Here bytes are counted as they arrive, and the request is answered 413 the
// moment the route's limit is passed, declared length or not (biome.json
// forbids h3's own body readers everywhere else).

/** The routes anyone may call (first-admin setup, password, TOTP and passkey login): a few hundred bytes of JSON are enough. */
export const PUBLIC_BODY_LIMIT_BYTES = 16 * 1024
/** Every other JSON body, and a whole certificate upload (three PEM parts of 256 KiB each at most). */
export const JSON_BODY_LIMIT_BYTES = 1024 * 1024
/** Room for the multipart framing and the `apply` part beside the NPM database file. */
const _MULTIPART_FRAMING_BYTES = 64 * 1024

const _PUBLIC_BODY_PATHS: ReadonlySet<string> = new Set([
  '/api/setup',
  '/api/auth/login',
  '/api/auth/login/totp',
  '/api/auth/login/passkey/options',
  '/api/auth/login/passkey',
  '/api/auth/passkeys/login/options',
  '/api/auth/passkeys/login',
])

/**
 * The body limit of the route at `path` (the path as documented, without its query). Paths that
 * are not exactly a documented route get the default and are refused as unknown before any body
 * is read (server/middleware/30-routes.ts).
 */
export function bodyLimitFor(path: string): number {
  if (_PUBLIC_BODY_PATHS.has(path)) return PUBLIC_BODY_LIMIT_BYTES
  if (path === NPM_IMPORT_PATH) return NPM_DATABASE_LIMIT_BYTES + _MULTIPART_FRAMING_BYTES
  if (path === BACKUP_UPLOAD_PATH) return BACKUP_UPLOAD_LIMIT_BYTES + _MULTIPART_FRAMING_BYTES
  return JSON_BODY_LIMIT_BYTES
}

/** How long, and how much more, a connection is read after its 413 before it is closed. */
const _LINGER_MS = 2000
const _LINGER_BYTES = 8 * 1024 * 1024

/**
 * The 413 for a body past `limitBytes`; the connection is closed after it, but not at once: closed
 * with the client's bytes still arriving, the socket is reset and the answer can be lost with it
 * (seen on this machine: the client read no answer at all). What still arrives is read and dropped
 * for up to 2 s or 8 MiB after the answer (a lingering close, as web servers do), then the socket
 * goes; nothing of it is kept. No `Connection: close` header: Node would end the socket on it.
 */
export function bodyTooLarge(event: H3Event, limitBytes: number) {
  const { req, res } = event.node
  const context = event.context as { [_LINGER]?: true }
  if (!res.headersSent && !context[_LINGER]) {
    context[_LINGER] = true
    res.once('finish', () => _lingerThenClose(req))
  }
  return payloadTooLarge(limitBytes)
}
const _LINGER = Symbol('lingering close')

function _lingerThenClose(req: H3Event['node']['req']): void {
  const socket = req.socket
  if (req.readableEnded || socket.destroyed) {
    socket.destroySoon()
    return
  }
  let extra = 0
  const close = () => {
    clearTimeout(timer)
    req.off('data', onData)
    socket.destroy()
  }
  const onData = (chunk: Buffer) => {
    extra += chunk.length
    if (extra > _LINGER_BYTES) close()
  }
  const timer = setTimeout(close, _LINGER_MS)
  req.on('data', onData).once('end', close)
  req.resume()
}

const _READ = Symbol('bounded body')

/**
 * The request body, at most `limitBytes` (the route's own limit by default); undefined when the
 * request has none. Past the limit the promise rejects with a 413 as soon as the byte that crosses
 * it arrives; nothing received is kept, and later chunks are dropped as they come.
 */
export function readBoundedBody(event: H3Event, limitBytes = bodyLimitFor(event.path.split('?')[0]!)): Promise<Buffer | undefined> {
  const context = event.context as { [_READ]?: Promise<Buffer | undefined> }
  if (context[_READ]) return context[_READ]
  const req = event.node.req
  const declared = req.headers['content-length']
  const chunked = /\bchunked\b/i.test(String(req.headers['transfer-encoding'] ?? ''))
  // As h3: a request with neither a length nor chunked framing has no body.
  if (!Number.parseInt(declared ?? '', 10) && !chunked) return (context[_READ] = Promise.resolve(undefined))
  if (Number(declared) > limitBytes) return (context[_READ] = Promise.reject(bodyTooLarge(event, limitBytes)))
  context[_READ] = new Promise<Buffer | undefined>((resolve, reject) => {
    const chunks: Buffer[] = []
    let received = 0
    const stop = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
      chunks.length = 0
    }
    const onData = (chunk: Buffer) => {
      received += chunk.length
      if (received > limitBytes) {
        stop()
        // The stream keeps flowing with no listener: Node drops what still arrives until the
        // socket closes after the 413 (Connection: close).
        req.resume()
        reject(bodyTooLarge(event, limitBytes))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      const body = Buffer.concat(chunks, received)
      stop()
      resolve(body)
    }
    const onError = () => {
      stop()
      reject(badRequest('the request body could not be read: send it again'))
    }
    // The client went away before the end: nobody is left to answer, but the handler must not hang.
    const onClose = () => {
      if (req.readableEnded) return
      stop()
      reject(badRequest('the request body was cut off before its end'))
    }
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose)
  })
  return context[_READ]
}

/**
 * A multipart/form-data body read within the route's limit, then split into parts by h3.
 * undefined when the request is not multipart or has no body.
 */
export async function readBoundedMultipart(event: H3Event, limitBytes?: number): Promise<MultiPartData[] | undefined> {
  const type = event.node.req.headers['content-type'] ?? ''
  if (!type.startsWith('multipart/form-data') || !/boundary=/i.test(type)) return undefined
  const body = await readBoundedBody(event, limitBytes)
  if (!body?.length) return undefined
  // h3 reads a body it is handed before the request stream: the bytes just counted, not the socket.
  event._requestBody = body as Uint8Array<ArrayBuffer>
  return readMultipartFormData(event)
}

/** How long an early refusal waits for the rest of a body it never needed. */
const _DISCARD_WAIT_MS = 10_000

/**
 * Before an early refusal (401, 403, a 400 on the query, 415) of a request whose body nobody read:
 * reads what is left of it, within the route's limit, and drops it. Without this, a client that
 * asked for `Connection: close` (or any client, once the socket closes) may still be sending when
 * the socket goes, and gets a reset instead of the answer; Node drains a body itself only on a
 * connection it keeps. Nothing is kept; past the limit, or after 10 s, the answer goes anyway.
 */
export function discardUnreadBody(event: H3Event): Promise<void> {
  const req = event.node.req
  if ((event.context as { [_READ]?: unknown })[_READ] || req.readableEnded || req.destroyed) return Promise.resolve()
  const limitBytes = bodyLimitFor(event.path.split('?')[0]!)
  const declared = Number.parseInt(req.headers['content-length'] ?? '', 10)
  const chunked = /\bchunked\b/i.test(String(req.headers['transfer-encoding'] ?? ''))
  if ((!declared && !chunked) || declared > limitBytes) return Promise.resolve()
  return new Promise<void>((resolve) => {
    let received = 0
    const done = () => {
      clearTimeout(timer)
      req.off('data', onData).off('end', done).off('error', done).off('close', done)
      resolve()
    }
    const onData = (chunk: Buffer) => {
      received += chunk.length
      if (received > limitBytes) done()
    }
    const timer = setTimeout(done, _DISCARD_WAIT_MS)
    req.on('data', onData).on('end', done).on('error', done).on('close', done)
    req.resume()
  })
}
