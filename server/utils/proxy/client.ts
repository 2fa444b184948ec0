import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'

// The one client of the proxy's admin API. Every call uses a fresh connection:
// each /load restarts Caddy's admin server and resets kept-alive sockets.

export type LoadResult = { outcome: 'applied' } | { outcome: 'rejected'; proxyError: string } | { outcome: 'unreachable'; error: string }

interface _Answer {
  status: number
  body: string
}

function _call(
  adminUrl: string,
  method: string,
  path: string,
  body: string | undefined,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<_Answer> {
  const url = new URL(path, `${adminUrl}/`)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method,
        agent: false,
        timeout: timeoutMs,
        headers: {
          connection: 'close',
          ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end(body)
  })
}

function _describeNetworkError(err: unknown): string {
  const e = err as NodeJS.ErrnoException
  if (e.code && !e.message.includes(e.code)) return `${e.code} ${e.message}`
  return e.message.replace(/^connect /, '')
}

/** POST /load. `force` sends Cache-Control: must-revalidate so identical JSON still reloads (rotated files). */
export async function loadProxyConfig(adminUrl: string, configJson: string, opts: { force?: boolean } = {}): Promise<LoadResult> {
  let answer: _Answer
  try {
    answer = await _call(adminUrl, 'POST', '/load', configJson, opts.force ? { 'cache-control': 'must-revalidate' } : {}, 20_000)
  } catch (err) {
    return { outcome: 'unreachable', error: `proxy admin API at ${adminUrl} is unreachable: ${_describeNetworkError(err)}` }
  }
  if (answer.status >= 200 && answer.status < 300) return { outcome: 'applied' }
  let text = answer.body.trim()
  try {
    text = JSON.parse(text).error ?? text
  } catch {
    /* plain text */
  }
  if (answer.status >= 500 && !text) return { outcome: 'unreachable', error: `proxy admin API answered ${answer.status}` }
  return { outcome: 'rejected', proxyError: text || `HTTP ${answer.status}` }
}

/** GET /config/: what the proxy holds now (null for an empty config). */
export async function readProxyConfig(
  adminUrl: string,
  opts: { timeoutMs?: number } = {},
): Promise<{ ok: true; config: unknown } | { ok: false; error: string }> {
  try {
    const answer = await _call(adminUrl, 'GET', '/config/', undefined, {}, opts.timeoutMs ?? 5_000)
    if (answer.status !== 200) return { ok: false, error: `proxy admin API answered ${answer.status}` }
    return { ok: true, config: answer.body.trim() ? JSON.parse(answer.body) : null }
  } catch (err) {
    return { ok: false, error: `proxy admin API at ${adminUrl} is unreachable: ${_describeNetworkError(err)}` }
  }
}
