import { createServer, type IncomingHttpHeaders } from 'node:http'
import { createServer as createNetServer, type Socket } from 'node:net'
import { freePort } from './ports'

export interface RecordedRequest {
  method: string
  url: string
  headers: IncomingHttpHeaders
  remoteAddress: string
}

/** A test upstream that records every request and answers {upstream: <port>, url, headers}. */
/** `host`: the address to listen on (a host end of createNodeNamespaces' pairs, for proxies in namespaces). */
export async function startTestUpstream(opts: { host?: string } = {}) {
  const host = opts.host ?? '127.0.0.1'
  const port = await freePort()
  const requests: RecordedRequest[] = []
  const sockets = new Set<Socket>()
  let failStatus: number | null = null
  const extraHeaders = new Map<string, string>()
  const server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, remoteAddress: req.socket.remoteAddress ?? '' })
    res.setHeader('content-type', 'application/json')
    if (failStatus) res.statusCode = failStatus
    for (const [k, v] of extraHeaders) res.setHeader(k, v)
    res.end(JSON.stringify({ upstream: port, url: req.url, headers: req.headers }))
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  await listen()
  let down = false
  return {
    port,
    url: `http://${host}:${port}`,
    requests,
    /** Adds a response header to every answer (null removes it). */
    setResponseHeader(name: string, value: string | null) {
      if (value === null) extraHeaders.delete(name)
      else extraHeaders.set(name, value)
    },
    /** Answers every request with this status (null: 200 again) while still listening. */
    setFailing(status: number | null) {
      failStatus = status
    },
    async setDown(value: boolean) {
      if (value === down) return
      down = value
      if (value) await close()
      else await listen()
    },
    async stop() {
      if (!down) await close()
      down = true
    },
  }
}

export type TestUpstream = Awaited<ReturnType<typeof startTestUpstream>>

/** A TCP upstream of a stream: what the proxy opened to it and sent over it. */
export interface LineEchoUpstream {
  port: number
  /** Connections the proxy opened to the upstream. */
  connections: number
  /** Bytes it was sent, and the text of them. */
  bytes: number
  received: string
  close(): Promise<void>
}

/** A TCP upstream on 127.0.0.1:`port` that answers each line with `echo:<line>` and counts what it was sent. */
export async function startLineEchoUpstream(port: number): Promise<LineEchoUpstream> {
  const sockets = new Set<Socket>()
  const echo: LineEchoUpstream = { port, connections: 0, bytes: 0, received: '', close: async () => {} }
  const server = createNetServer((socket) => {
    echo.connections++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = ''
    socket.on('data', (chunk) => {
      echo.bytes += chunk.length
      echo.received += chunk.toString('utf8')
      buf += chunk.toString('utf8')
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        socket.write(`echo:${buf.slice(0, nl)}\n`)
        buf = buf.slice(nl + 1)
      }
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  echo.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  return echo
}
