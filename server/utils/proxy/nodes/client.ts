import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { NodeStorageHealthAnswer, StorageCertificatesAnswer } from '../storage/schemas'

// The one client of the proxy's admin API. Every call uses a fresh connection:
// each /load restarts Caddy's admin server and resets kept-alive sockets.

/**
 * Where a node's admin API is: a plain URL (node one, or a node on a private
 * network), or Caddy's remote admin endpoint (https) with the panel's client
 * certificate and the CA that signed the node's identity certificate.
 */
export interface AdminTarget {
  url: string
  tls?: { cert: string; key: string; ca: string | null }
}

function _target(adminUrl: string | AdminTarget): AdminTarget {
  return typeof adminUrl === 'string' ? { url: adminUrl } : adminUrl
}

export type LoadResult = { outcome: 'applied' } | { outcome: 'rejected'; proxyError: string } | { outcome: 'unreachable'; error: string }

interface _Answer {
  status: number
  body: string
}

function _call(
  target: AdminTarget,
  method: string,
  path: string,
  body: string | undefined,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<_Answer> {
  const url = new URL(path, `${target.url}/`)
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  // Caddy's remote admin endpoint asks for a client certificate (TLS 1.3) and checks its public key.
  const tls =
    url.protocol === 'https:' && target.tls
      ? { cert: target.tls.cert, key: target.tls.key, ...(target.tls.ca ? { ca: target.tls.ca } : {}) }
      : {}
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method,
        agent: false,
        ...tls,
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

// This panel's /load calls per admin API: a read that overlapped one and got no answer is made again after it (_get).
const _loads = new Map<string, { started: number; running: Set<Promise<unknown>> }>()

function _loadsOf(url: string) {
  let loads = _loads.get(url)
  if (!loads) _loads.set(url, (loads = { started: 0, running: new Set() }))
  return loads
}

/** POST /load. `force` sends Cache-Control: must-revalidate so identical JSON still reloads (rotated files). */
export async function loadProxyConfig(
  admin: string | AdminTarget,
  configJson: string,
  opts: { force?: boolean } = {},
): Promise<LoadResult> {
  const target = _target(admin)
  const adminUrl = target.url
  const loads = _loadsOf(adminUrl)
  const call = _call(target, 'POST', '/load', configJson, opts.force ? { 'cache-control': 'must-revalidate' } : {}, 20_000)
  loads.started++
  loads.running.add(call)
  let answer: _Answer
  try {
    answer = await call
  } catch (err) {
    return { outcome: 'unreachable', error: `proxy admin API at ${adminUrl} is unreachable: ${_describeNetworkError(err)}` }
  } finally {
    loads.running.delete(call)
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

/** GET /config/ as the text the proxy answered ('null' for an empty configuration); see held-hash.ts for the parsed and hashed form. */
export async function readProxyConfigText(
  admin: string | AdminTarget,
  opts: { timeoutMs?: number } = {},
): Promise<{ ok: true; text: string } | { ok: false; error: string }> {
  try {
    const answer = await _get(admin, '/config/', opts.timeoutMs ?? 5_000)
    if (answer.status !== 200) return { ok: false, error: `proxy admin API answered ${answer.status}` }
    return { ok: true, text: answer.body }
  } catch (err) {
    return { ok: false, error: `proxy admin API at ${adminUrlOf(admin)} is unreachable: ${_describeNetworkError(err)}` }
  }
}

/**
 * GET on the admin API. A read that got no answer while this panel was loading a configuration
 * into the same proxy is made again once the load is done: Caddy holds every read behind a
 * load's lock, then restarts its admin server, so the proxy was busy with us, not away.
 */
async function _get(admin: string | AdminTarget, path: string, timeoutMs: number): Promise<_Answer> {
  const target = _target(admin)
  const loads = _loadsOf(target.url)
  const startedBefore = loads.started
  const loadingBefore = loads.running.size > 0
  try {
    return await _call(target, 'GET', path, undefined, {}, timeoutMs)
  } catch (err) {
    // A load running now was running before, or started since.
    if (!loadingBefore && loads.started === startedBefore) throw err
  }
  while (loads.running.size) await Promise.allSettled([...loads.running])
  return _call(target, 'GET', path, undefined, {}, timeoutMs)
}

/** The admin API's URL, for messages. */
export const adminUrlOf = (admin: string | AdminTarget) => _target(admin).url

/**
 * What the node's Caddy says of its build: Caddy's admin API has no version
 * endpoint, so this is the Go build line of its /metrics (the main module and
 * its version; "(devel)" for a local xcaddy build) and the Go version. Null
 * when /metrics is not served or not permitted (remote admin access control).
 */
export async function readProxyBuild(
  admin: string | AdminTarget,
  opts: { timeoutMs?: number } = {},
): Promise<{ main_module: string; version: string; go_version: string | null } | null> {
  try {
    const answer = await _get(admin, '/metrics', opts.timeoutMs ?? 2_000)
    if (answer.status !== 200) return null
    const build = /^go_build_info\{[^}]*path="([^"]*)"[^}]*version="([^"]*)"/m.exec(answer.body)
    if (!build) return null
    const go = /^go_info\{version="([^"]*)"\}/m.exec(answer.body)
    return { main_module: build[1]!, version: build[2]!, go_version: go?.[1] ?? null }
  } catch {
    return null
  }
}

/**
 * GET /reverse_proxy/upstreams: per upstream address, the requests in flight and the
 * passive health check's failures counted within its fail_duration. Caddy (2.6 to 2.11)
 * does not say the active check's verdict here; that comes from its log (ops/target-health.ts).
 * Null when the admin API does not answer.
 */
export async function readProxyUpstreams(
  admin: string | AdminTarget,
  opts: { timeoutMs?: number } = {},
): Promise<Map<string, { num_requests: number; fails: number }> | null> {
  try {
    const answer = await _get(admin, '/reverse_proxy/upstreams', opts.timeoutMs ?? 2_000)
    if (answer.status !== 200) return null
    const list = JSON.parse(answer.body)
    if (!Array.isArray(list)) return null
    const out = new Map<string, { num_requests: number; fails: number }>()
    for (const u of list)
      if (u && typeof u.address === 'string') out.set(u.address, { num_requests: Number(u.num_requests) || 0, fails: Number(u.fails) || 0 })
    return out
  } catch {
    return null
  }
}

/**
 * The proxy's verdict on each layer-4 upstream: caddy-l4's active health check sets the gauge
 * `caddy_layer4_proxy_upstream_healthy{upstream="tcp/host:port"}` at every check (admin API
 * `/metrics`). Keyed by that label; null when the admin API does not answer.
 */
export async function readLayer4UpstreamHealth(
  admin: string | AdminTarget,
  opts: { timeoutMs?: number } = {},
): Promise<Map<string, boolean> | null> {
  try {
    const answer = await _get(admin, '/metrics', opts.timeoutMs ?? 2_000)
    if (answer.status !== 200) return null
    const out = new Map<string, boolean>()
    for (const m of answer.body.matchAll(/^caddy_layer4_proxy_upstream_healthy\{upstream="([^"]*)"\} (\S+)$/gm))
      out.set(m[1]!, Number(m[2]) === 1)
    return out
  } catch {
    return null
  }
}

/**
 * POST /panel/dns-check (the proxy's dnscheck module, docs/tls.md): the node writes,
 * looks for and removes a TXT record through its own provider module. `waitMs`
 * covers the whole check (the node's propagation wait and two provider calls).
 */
export async function runProxyDnsCheck(
  admin: string | AdminTarget,
  body: unknown,
  waitMs: number,
): Promise<{ outcome: 'answered'; status: number; body: string } | { outcome: 'unreachable'; error: string }> {
  try {
    const answer = await _call(_target(admin), 'POST', '/panel/dns-check', JSON.stringify(body), {}, waitMs)
    return { outcome: 'answered', status: answer.status, body: answer.body }
  } catch (err) {
    return { outcome: 'unreachable', error: `proxy admin API at ${adminUrlOf(admin)} is unreachable: ${_describeNetworkError(err)}` }
  }
}

/** A JSON answer's `error`, or the status in words. */
function _answerError(answer: _Answer): string {
  try {
    const e = JSON.parse(answer.body)?.error
    if (typeof e === 'string' && e) return e
  } catch {
    /* not JSON */
  }
  return `the node's admin API answered ${answer.status}`
}

/** GET one of the production build's own admin routes; a network failure comes back as words. */
async function _getPanelRoute(
  admin: string | AdminTarget,
  path: string,
  timeoutMs = 2_000,
): Promise<{ answer: _Answer } | { error: string }> {
  try {
    return { answer: await _get(admin, path, timeoutMs) }
  } catch (err) {
    return { error: `proxy admin API at ${adminUrlOf(admin)} is unreachable: ${_describeNetworkError(err)}` }
  }
}

/**
 * GET /panel/storage/health (the production build's admin.api.panel_storage, docs/scaling.md):
 * the node writes, reads and deletes a probe key in its certificate storage. `absent`: the
 * node's build has no such module (404); `refused`: its remote admin access does not permit the path.
 */
export async function readNodeStorageHealth(
  admin: string | AdminTarget,
  opts: { timeoutMs?: number } = {},
): Promise<
  | { outcome: 'answered'; health: NodeStorageHealthAnswer }
  | { outcome: 'absent' }
  | { outcome: 'refused'; error: string }
  | { outcome: 'unreachable'; error: string }
> {
  const got = await _getPanelRoute(admin, '/panel/storage/health', opts.timeoutMs)
  if ('error' in got) return { outcome: 'unreachable', error: got.error }
  const answer = got.answer
  if (answer.status === 404) return { outcome: 'absent' }
  if (answer.status === 401 || answer.status === 403)
    return {
      outcome: 'refused',
      error: `the node's remote admin access does not permit /panel/storage/health (${_answerError(answer)}): add the path to its admin.remote access_control`,
    }
  // A failing storage may come with a 5xx status: the body still says why.
  try {
    const h = JSON.parse(answer.body)
    if (h && typeof h.ok === 'boolean' && typeof h.module === 'string')
      return {
        outcome: 'answered',
        health: {
          module: h.module,
          ok: h.ok,
          error: typeof h.error === 'string' && h.error ? h.error : null,
          latency_ms: Number(h.latency_ms) || 0,
          detail: typeof h.detail === 'string' ? h.detail : '',
        },
      }
  } catch {
    /* not the module's answer */
  }
  return { outcome: 'unreachable', error: _answerError(answer) }
}

/**
 * GET /panel/storage/certificates: every certificate in the node's storage with its expiry.
 * `absent`: a build without the module (404); any other failure (the storage's 503, a network
 * error) is `failed` with the reason.
 */
export async function readStorageCertificates(
  admin: string | AdminTarget,
  opts: { timeoutMs?: number } = {},
): Promise<
  | { outcome: 'answered'; certificates: StorageCertificatesAnswer['certificates'] }
  | { outcome: 'absent' }
  | { outcome: 'failed'; error: string }
> {
  const got = await _getPanelRoute(admin, '/panel/storage/certificates', opts.timeoutMs)
  if ('error' in got) return { outcome: 'failed', error: got.error }
  const answer = got.answer
  if (answer.status === 404) return { outcome: 'absent' }
  if (answer.status !== 200) return { outcome: 'failed', error: _answerError(answer) }
  try {
    const list = JSON.parse(answer.body)?.certificates
    if (!Array.isArray(list)) return { outcome: 'failed', error: 'the node answered no certificate list' }
    return {
      outcome: 'answered',
      certificates: list.filter(
        (c) => c && typeof c.name === 'string' && typeof c.not_after === 'string' && !Number.isNaN(Date.parse(c.not_after)),
      ),
    }
  } catch {
    return { outcome: 'failed', error: 'the node answered something that is not JSON' }
  }
}
