import { once } from 'node:events'
import { readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPanel, type PanelHandle } from '../support/panel'

// Regression (issue 33, item 5; review finding 4): a chunked request body was
// buffered whole before the 1 MiB check (h3's readRawBody has no limit, and
// middleware/00-ready.ts checked only a declared Content-Length). 300 MiB
// streamed at the public POST /api/auth/login took the panel from 132 MiB to
// 731 MiB. Bodies are now counted as they arrive and refused with 413 the
// moment the route's limit is passed (server/utils/core/body.ts).

let panel: PanelHandle
let cookie: string

beforeAll(async () => {
  panel = await startPanel()
  cookie = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

const MiB = 1024 * 1024

function statusLine(pid: number, key: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no ${key} in /proc/${pid}/status`)
  return Number(m[1]) * 1024
}

/** Resets the process's peak RSS (VmHWM) to its current RSS (Linux: "5" into clear_refs). */
function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5')
}

interface Streamed {
  /** The status of the answer, or null when the connection closed without one. */
  status: number | null
  body: string
  /** Bytes of body handed to the socket before the answer came or the connection closed. */
  sentBytes: number
}

/** A complete HTTP/1.1 answer in `raw` (headers and the Content-Length of body)? */
function _answerOf(raw: Buffer): { status: number; body: string } | null {
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) return null
  const head = raw.subarray(0, end).toString('latin1')
  const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? 0)
  if (raw.length < end + 4 + length) return null
  return { status: Number(head.split(' ')[1]), body: raw.subarray(end + 4, end + 4 + length).toString('utf8') }
}

/**
 * POSTs `totalBytes` of body with chunked framing (no Content-Length), one reused chunk at a time,
 * over a raw socket so that an answer sent before the end of the body is seen even when the
 * server then closes the connection. `afterChunk` runs after each chunk (a memory probe).
 */
async function streamChunked(
  path: string,
  opts: { headers?: Record<string, string>; totalBytes: number; chunk: Buffer; afterChunk?: (sentBytes: number) => void },
): Promise<Streamed> {
  const socket = connect(panel.port, '127.0.0.1')
  await once(socket, 'connect')
  let raw = Buffer.alloc(0)
  let closed = false
  const closedP = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true
      resolve()
    }),
  )
  socket.on('error', () => {}) // a reset after the answer is expected: the server stops reading
  let answered: () => void = () => {}
  const answeredP = new Promise<void>((resolve) => (answered = resolve))
  socket.on('data', (d: Buffer) => {
    raw = Buffer.concat([raw, d])
    if (_answerOf(raw)) answered()
  })
  const head = [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Transfer-Encoding: chunked',
    ...Object.entries(opts.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ]
  socket.write(`${head.join('\r\n')}\r\n\r\n`)
  const frame = Buffer.concat([Buffer.from(`${opts.chunk.length.toString(16)}\r\n`), opts.chunk, Buffer.from('\r\n')])
  let sentBytes = 0
  while (sentBytes < opts.totalBytes && !closed && !_answerOf(raw)) {
    // once() rejects when the socket errors (a reset after the answer): that ends the loop through closedP.
    if (!socket.write(frame)) await Promise.race([once(socket, 'drain').catch(() => {}), closedP, answeredP])
    sentBytes += opts.chunk.length
    opts.afterChunk?.(sentBytes)
  }
  if (!closed && !_answerOf(raw)) socket.write('0\r\n\r\n')
  await Promise.race([closedP, answeredP])
  socket.destroy()
  const answer = _answerOf(raw)
  return { status: answer?.status ?? null, body: answer?.body ?? '', sentBytes }
}

describe('bodies are counted while they arrive', () => {
  it('1 GiB streamed at the public login: 413 at once, and the panel RSS stays within 32 MiB of idle', async () => {
    // Idle: after a first login, so that the route's code is loaded and warm.
    await panel.request('/api/auth/login', { method: 'POST', body: { email: 'nobody@example.test', password: 'wrong-password-1' } })
    const idle = statusLine(panel.pid, 'VmRSS')
    resetPeakRss(panel.pid)
    // The bound: the panel holds at most the route's 16 KiB of body plus Node's own read buffers
    // (64 KiB per read); 32 MiB leaves room for V8 heap growth and garbage not yet collected,
    // and is 1/32 of what is streamed: buffering the body would cross it within the first 32 MiB.
    const bound = idle + 32 * MiB
    const chunk = Buffer.alloc(MiB, 0x20) // one MiB of JSON whitespace, sent 1024 times
    const res = await streamChunked('/api/auth/login', {
      headers: { 'Content-Type': 'application/json' },
      totalBytes: 1024 * MiB,
      chunk,
      afterChunk: (sent) => {
        const rss = statusLine(panel.pid, 'VmRSS')
        if (rss > bound)
          throw new Error(`panel RSS grew by ${Math.round((rss - idle) / MiB)} MiB after ${Math.round(sent / MiB)} MiB streamed`)
      },
    })
    // The answer came long before the end: the socket's buffers took the little that was sent.
    expect(res.status).toBe(413)
    expect(JSON.parse(res.body)).toEqual({ error: 'request body too large: the limit is 16384 bytes' })
    expect(res.sentBytes).toBeLessThan(64 * MiB)
    expect(statusLine(panel.pid, 'VmHWM')).toBeLessThan(bound)
    // The panel goes on serving.
    expect((await panel.request('/api/setup')).status).toBe(200)
  })

  it('the public routes take 16 KiB, declared or chunked; within it a body is read as usual', async () => {
    const big = JSON.stringify({ email: 'x@example.test', password: 'p'.repeat(20 * 1024) })
    for (const path of ['/api/auth/login', '/api/auth/login/totp', '/api/setup']) {
      const declared = await panel.request(path, { method: 'POST', rawBody: big, headers: { 'content-type': 'application/json' } })
      expect(declared.status, path).toBe(413)
      expect(declared.headers.get('connection'), path).toBe('close')
      const chunked = await streamChunked(path, {
        headers: { 'Content-Type': 'application/json' },
        totalBytes: 20 * 1024,
        chunk: Buffer.alloc(1024, 0x20),
      })
      expect(chunked.status, path).toBe(413)
      expect(JSON.parse(chunked.body), path).toEqual({ error: 'request body too large: the limit is 16384 bytes' })
    }
    // Chunked and within the limit: the login answers on the credentials.
    const body = Buffer.from(JSON.stringify({ email: 'admin@example.test', password: 'not-the-password-1' }).padEnd(15 * 1024, ' '))
    const ok = await streamChunked('/api/auth/login', {
      headers: { 'Content-Type': 'application/json' },
      totalBytes: body.length,
      chunk: body,
    })
    expect(ok.status).toBe(401)
  })

  it('an authenticated JSON route takes 1 MiB; 2 MiB chunked is a 413 and creates nothing', async () => {
    const users = async () => Number((await panel.db().execute('SELECT count(*) AS n FROM users')).rows[0]!.n)
    const before = await users()
    const res = await streamChunked('/api/users', {
      headers: { 'Content-Type': 'application/json', Cookie: cookie },
      totalBytes: 2 * MiB,
      chunk: Buffer.alloc(64 * 1024, 0x20),
    })
    expect(res.status).toBe(413)
    expect(JSON.parse(res.body)).toEqual({ error: `request body too large: the limit is ${MiB} bytes` })
    expect(await users()).toBe(before)
  })

  it('multipart uploads are bounded too: a certificate upload past 1 MiB, an NPM database past its 64 MiB', async () => {
    // X-Panel-Request: a cookie upload needs it (the cross-site rule); this test is about the size.
    const multipart = { 'Content-Type': 'multipart/form-data; boundary=xyz', Cookie: cookie, 'X-Panel-Request': '1' }
    const cert = await streamChunked('/api/manual-certs/1', {
      headers: multipart,
      totalBytes: 2 * MiB,
      chunk: Buffer.alloc(64 * 1024, 0x41),
    })
    expect(cert.status).toBe(413)
    const npm = await streamChunked('/api/import/npm', { headers: multipart, totalBytes: 80 * MiB, chunk: Buffer.alloc(MiB, 0x41) })
    expect(npm.status).toBe(413)
    expect(JSON.parse(npm.body).error).toMatch(/^request body too large: the limit is \d+ bytes$/)
    expect(npm.sentBytes).toBeLessThan(80 * MiB)
  })
})

describe('nesting depth', () => {
  // Regression (issue 33, item 10; review Info "deeply nested JSON"): a 1 MB body of nested arrays
  // to the public login route answered 500 "internal error" (assertCleanJson overflowed the stack).
  it('a 1 MB body of nested arrays to a JSON route is a 400 naming the limit', async () => {
    // The public login takes 16 KiB: the 1 MB document is parsed at an admin route (1 MiB), and
    // a 16 KB one at the login, both far past 64 levels.
    const deep = (bytes: number) => '['.repeat(bytes / 2) + ']'.repeat(bytes / 2)
    const expected = { error: 'body: nests deeper than 64 levels of arrays and objects; send a flatter document' }
    const admin = await panel.request('/api/users', {
      method: 'POST',
      cookie,
      rawBody: deep(1_000_000),
      headers: { 'content-type': 'application/json' },
    })
    expect(admin.status).toBe(400)
    expect(admin.json).toEqual(expected)
    // The 1 MB document at the public login: refused by its size before anything parses it.
    const loginBig = await panel.request('/api/auth/login', {
      method: 'POST',
      rawBody: deep(1_000_000),
      headers: { 'content-type': 'application/json' },
    })
    expect(loginBig.status).toBe(413)
    const login = await panel.request('/api/auth/login', {
      method: 'POST',
      rawBody: deep(16_000),
      headers: { 'content-type': 'application/json' },
    })
    expect(login.status).toBe(400)
    expect(login.json).toEqual(expected)
    expect(panel.output()).not.toMatch(/Maximum call stack/)
  })
})
