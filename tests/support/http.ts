import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
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

export interface PresentedCertificate {
  subject: string
  issuer: string
  authorized: boolean
  serialNumber: string
  sans: string
  validTo: string
  fingerprint256: string
  /** Which of `servedBy`'s processes accepted the connection (null when none or not asked). */
  servedBy: number | null
}

/**
 * The certificate a TLS server presents for `servername` (null when the handshake fails).
 * `servedBy`: processes sharing the port (SO_REUSEPORT); the answer names the one that
 * accepted this connection, looked up while the connection is open.
 */
export function presentedCertificate(
  port: number,
  servername: string,
  ca: string,
  servedBy: number[] = [],
): Promise<PresentedCertificate | null> {
  return presentedAt('127.0.0.1', port, servername, { ca, servedBy })
}

/** The certificate `address:port` presents for `servername` (null when the handshake fails). */
export function presentedAt(
  address: string,
  port: number,
  servername: string,
  opts: { ca?: string; servedBy?: number[] } = {},
): Promise<PresentedCertificate | null> {
  const servedBy = opts.servedBy ?? []
  return new Promise((resolve) => {
    const socket = connect({ host: address, port, servername, ca: opts.ca, rejectUnauthorized: false, timeout: 5000 }, () => {
      const cert = socket.getPeerCertificate()
      resolve({
        subject: String(cert.subject?.CN ?? ''),
        issuer: String(cert.issuer?.CN ?? ''),
        authorized: socket.authorized,
        serialNumber: String(cert.serialNumber ?? ''),
        sans: String(cert.subjectaltname ?? ''),
        validTo: String(cert.valid_to ?? ''),
        fingerprint256: String(cert.fingerprint256 ?? ''),
        servedBy: servedBy.length ? acceptingProcess(port, socket.localPort!, servedBy) : null,
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

/** '0100007F:1F90' for 127.0.0.1:8080, as /proc/net/tcp writes addresses. */
const _procLoopback = (port: number) => `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`

/**
 * Which of `pids` holds the server side of the open loopback connection from
 * `clientPort` to `serverPort`: the kernel's socket table (/proc/net/tcp) gives the
 * socket's inode, the processes' fd tables say whose it is. Processes sharing a port
 * through SO_REUSEPORT are otherwise indistinguishable from the client.
 */
export function acceptingProcess(serverPort: number, clientPort: number, pids: number[]): number | null {
  const local = _procLoopback(serverPort),
    remote = _procLoopback(clientPort)
  const row = readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((f) => f[1] === local && f[2] === remote)
  if (!row) return null
  const socket = `socket:[${row[9]}]`
  for (const pid of pids) {
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === socket) return pid
      } catch {
        // closed meanwhile
      }
    }
  }
  return null
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
