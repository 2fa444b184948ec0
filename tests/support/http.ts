import { request } from 'node:http'
import { connect } from 'node:tls'

// Plain requests with an explicit Host header, as a browser would send through
// the proxy (fetch does not let a test choose the Host header reliably).

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

export function httpRequest(opts: {
  port: number
  host: string
  path?: string
  method?: string
  headers?: Record<string, string>
  address?: string
  body?: string
}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: opts.address ?? '127.0.0.1',
        port: opts.port,
        path: opts.path ?? '/',
        method: opts.method ?? 'GET',
        agent: false,
        headers: {
          host: opts.host,
          connection: 'close',
          ...(opts.body !== undefined
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(opts.body)) }
            : {}),
          ...opts.headers,
        },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      },
    )
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(opts.body)
  })
}

/** Polls until `check` passes or the time is up; returns the last value for the assertion. */
export async function eventually<T>(probe: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 15_000, stepMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: T
  for (;;) {
    try {
      last = await probe()
    } catch (err) {
      last = err as T
    }
    if (check(last)) return last
    if (Date.now() > deadline) return last
    await new Promise((r) => setTimeout(r, stepMs))
  }
}

/** The certificate a TLS server presents for `servername` (null when the handshake fails). */
export function presentedCertificate(
  port: number,
  servername: string,
  ca: string,
): Promise<{
  subject: string
  issuer: string
  authorized: boolean
  serialNumber: string
  sans: string
  validTo: string
  fingerprint256: string
} | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: false, timeout: 5000 }, () => {
      const cert = socket.getPeerCertificate()
      resolve({
        subject: String(cert.subject?.CN ?? ''),
        issuer: String(cert.issuer?.CN ?? ''),
        authorized: socket.authorized,
        serialNumber: String(cert.serialNumber ?? ''),
        sans: String(cert.subjectaltname ?? ''),
        validTo: String(cert.valid_to ?? ''),
        fingerprint256: String(cert.fingerprint256 ?? ''),
      })
      socket.end()
    })
    socket.on('error', () => resolve(null))
    socket.on('timeout', () => {
      socket.destroy()
      resolve(null)
    })
  })
}

/** Reads a server-sent events body until `needle` shows up or the time is up; returns what was read. */
export async function readSseUntil(body: ReadableStream<Uint8Array>, needle: string, timeoutMs = 5_000): Promise<string> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const deadline = Date.now() + timeoutMs
  // One read is kept pending across the waits: a read abandoned on a timeout
  // would swallow the chunk that later resolves it.
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined
  while (!text.includes(needle) && Date.now() < deadline) {
    pending ??= reader.read()
    const tick = new Promise<'tick'>((r) => setTimeout(() => r('tick'), Math.max(1, Math.min(250, deadline - Date.now()))))
    const result = await Promise.race([pending, tick])
    if (result === 'tick') continue
    pending = undefined
    if (result.done) break
    if (result.value) text += decoder.decode(result.value, { stream: true })
  }
  await reader.cancel()
  return text
}
