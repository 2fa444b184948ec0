import { createServer, request, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { gunzipSync, gzipSync, zstdDecompressSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Compression through the production Caddy (docs/hosts.md, "Compression"): a new panel
// compresses (proxy.compression defaults to on), a host can turn it off, and the answers
// decode to exactly the upstream's bytes.

const PAGE = Buffer.from(`<!doctype html><title>page</title>${'<p>compress me, compress me again</p>\n'.repeat(200)}`)
const JSON_BODY = Buffer.from(JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => ({ i, name: `item ${i}` })) }))
const PRE_GZIPPED = gzipSync(Buffer.from('already compressed by the upstream '.repeat(100)), { level: 1 })

let stack: ProxyStack
let upstreamPort: number
const sockets = new Set<Socket>()
// The SSE handler sends its second event only once the client has read the first.
let firstEventSeen: () => void = () => {}
const upstream = createServer((req, res: ServerResponse) => {
  if (req.url === '/page') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
  else if (req.url === '/json') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON_BODY)
  else if (req.url === '/tiny') res.writeHead(200, { 'content-type': 'text/plain' }).end('x')
  else if (req.url === '/pre-gzipped')
    res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': PRE_GZIPPED.length }).end(PRE_GZIPPED)
  else if (req.url === '/events') {
    const seen = new Promise<void>((resolve) => {
      firstEventSeen = resolve
    })
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    res.write(`data: first ${'padding '.repeat(200)}\n\n`)
    void seen.then(() => res.end('data: second\n\n'))
  } else res.writeHead(404).end()
})
upstream.on('connection', (s) => {
  sockets.add(s)
  s.on('close', () => sockets.delete(s))
})

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
}

/** A request through the proxy that keeps the body's raw bytes (no decoding). */
function get(host: string, path: string, acceptEncoding?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: stack.httpPort,
        path,
        agent: false,
        headers: { host, connection: 'close', ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}) },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
      },
    )
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end()
  })
}

beforeAll(async () => {
  upstreamPort = await freePort()
  await new Promise<void>((resolve) => upstream.listen(upstreamPort, '127.0.0.1', resolve))
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${upstreamPort}` }] })
  expect((await createHost(stack, { domain: 'zip.example.test', target_group_id: group.id })).status).toBe(201)
  expect((await createHost(stack, { domain: 'plain.example.test', target_group_id: group.id, compression: 'off' })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  for (const s of sockets) s.destroy()
  await new Promise<void>((resolve) => upstream.close(() => resolve()))
})

describe('compression through the production proxy', () => {
  it('a new panel compresses by default', async () => {
    const settings = await stack.panel.request('/api/settings', { cookie: stack.admin })
    expect(settings.json['proxy.compression']).toBe(true)
  })

  it('Accept-Encoding: zstd gives zstd that decodes to the upstream bytes', async () => {
    const res = await get('zip.example.test', '/page', 'zstd')
    expect(res.status).toBe(200)
    expect(res.headers['content-encoding']).toBe('zstd')
    expect(res.headers.vary).toMatch(/accept-encoding/i)
    expect(res.body.length).toBeLessThan(PAGE.length)
    expect(zstdDecompressSync(res.body).equals(PAGE)).toBe(true)
  })

  it('Accept-Encoding: gzip gives gzip that decodes to the upstream bytes (a JSON answer)', async () => {
    const res = await get('zip.example.test', '/json', 'gzip')
    expect(res.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(res.body).equals(JSON_BODY)).toBe(true)
  })

  it('zstd is preferred when the client takes both', async () => {
    const res = await get('zip.example.test', '/page', 'gzip, deflate, br, zstd')
    expect(res.headers['content-encoding']).toBe('zstd')
  })

  it('without Accept-Encoding the answer is the upstream bytes as they are', async () => {
    const res = await get('zip.example.test', '/page')
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.body.equals(PAGE)).toBe(true)
  })

  it('a 1-byte body is not compressed', async () => {
    const res = await get('zip.example.test', '/tiny', 'zstd, gzip')
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.body.toString()).toBe('x')
  })

  it("an upstream's own gzip answer is passed through unchanged, never compressed twice", async () => {
    const res = await get('zip.example.test', '/pre-gzipped', 'zstd, gzip')
    expect(res.headers['content-encoding']).toBe('gzip')
    expect(res.body.equals(PRE_GZIPPED)).toBe(true)
  })

  it('a host with compression off sends the upstream bytes', async () => {
    const res = await get('plain.example.test', '/page', 'zstd, gzip')
    expect(res.headers['content-encoding']).toBeUndefined()
    expect(res.body.equals(PAGE)).toBe(true)
  })

  it('an event stream through a compressed host is not compressed and delivers each event at once', async () => {
    const text = await new Promise<{ encoding: string | undefined; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: stack.httpPort,
          path: '/events',
          agent: false,
          headers: { host: 'zip.example.test', 'accept-encoding': 'zstd, gzip', accept: 'text/event-stream' },
        },
        (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => {
            body += chunk
            // The upstream holds the second event until this client has the first: a
            // buffered first event would never arrive, and the test would time out.
            if (body.includes('data: first')) firstEventSeen()
          })
          res.on('end', () => resolve({ encoding: res.headers['content-encoding'], text: body }))
        },
      )
      req.on('error', reject)
      req.end()
    })
    expect(text.encoding).toBeUndefined()
    expect(text.text).toContain('data: first')
    expect(text.text).toContain('data: second\n\n')
  })
})
