import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'

export interface FreshRequestOptions {
  method?: string
  /** Sent as is; a JSON content type is added unless `headers` sets one. */
  body?: string
  headers?: Record<string, string>
  /** For https URLs: the CA to trust (PEM). */
  ca?: string
  timeoutMs?: number
}

/**
 * One request on a fresh connection, closed afterwards (Caddy resets kept-alive
 * admin sockets on every /load). Works for http and https URLs.
 */
export function freshRequest(
  url: string,
  opts: FreshRequestOptions = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const isHttps = url.startsWith('https:')
  const headers: Record<string, string | number> = { connection: 'close' }
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json'
    headers['content-length'] = Buffer.byteLength(opts.body)
  }
  Object.assign(headers, opts.headers)
  return new Promise((resolve, reject) => {
    const req = (isHttps ? httpsRequest : httpRequest)(
      url,
      {
        method: opts.method ?? 'GET',
        agent: false,
        timeout: opts.timeoutMs ?? 10_000,
        headers,
        ...(isHttps && opts.ca ? { ca: opts.ca } : {}),
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }))
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`timeout: ${opts.method ?? 'GET'} ${url}`)))
    req.on('error', reject)
    req.end(opts.body)
  })
}
