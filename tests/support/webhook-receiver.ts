import { createServer, type IncomingHttpHeaders } from 'node:http'
import { freePort } from './ports'

// A loopback HTTP server that plays a webhook's receiver (notification channels, alerts): it
// keeps every request and answers 200 "ok", or what `respond` says. One helper instead of a
// hand-written server in each test file.

export interface ReceivedRequest {
  path: string
  headers: IncomingHttpHeaders
  body: string
}

export interface WebhookReceiver {
  port: number
  /** http://127.0.0.1:<port> (no trailing slash). */
  url: string
  /** Every request, in arrival order. */
  received: ReceivedRequest[]
  close(): Promise<void>
}

export async function startWebhookReceiver(
  opts: {
    /** Called with each request once its body is in. */
    onRequest?: (r: ReceivedRequest) => void
    /** The answer to a request (default 200 "ok", at once). */
    respond?: (r: ReceivedRequest) => { status?: number; body?: string; delayMs?: number }
  } = {},
): Promise<WebhookReceiver> {
  const port = await freePort()
  const received: ReceivedRequest[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => {
      body += c
    })
    req.on('end', () => {
      const r = { path: req.url ?? '', headers: req.headers, body }
      received.push(r)
      opts.onRequest?.(r)
      const answer = opts.respond?.(r) ?? {}
      res.statusCode = answer.status ?? 200
      const end = () => res.end(answer.body ?? 'ok')
      if (answer.delayMs) setTimeout(end, answer.delayMs)
      else end()
    })
  })
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
