import { isIP } from 'node:net'
import { getConfig } from '../core/config'
import { readTopLevelArrays } from '../core/json-array-reader'
import { upstreamFailed, upstreamUnavailable } from '../core/errors'
import { PANEL_VERSION } from '../core/version'
import { redactSecrets } from '../core/redact'

// The one client of the security engine's local API (LAPI). Machine routes use
// a JWT from /v1/watchers/login (reused, renewed on 401); bouncer routes use the
// key. The LAPI answers null for empty lists: every list comes back as [].

const _TIMEOUT_MS = 5_000
const _USER_AGENT = `edge-panel/${PANEL_VERSION}` // the LAPI refuses a User-Agent not shaped name/version

let _token: string | undefined
let _loginInFlight: Promise<string> | undefined

export interface LapiDecision {
  id: number
  origin: string
  type: string
  scope: string
  value: string
  duration: string
  scenario: string
  until?: string
}

export class LapiUnreachable extends Error {}

/** The engine's own text goes through redaction before it can reach a response or a log line. */
async function _engineError(status: number, body: string) {
  let text = body
  try {
    text = JSON.parse(body).message ?? body
  } catch {
    /* plain */
  }
  const message = await redactSecrets(`security engine answered ${status}: ${String(text).slice(0, 300)}`)
  return upstreamFailed(message)
}

async function _send(path: string, init: RequestInit & { query?: Record<string, string>; timeoutMs?: number }): Promise<Response> {
  const url = new URL(path, `${getConfig().lapi.url}/`)
  for (const [k, v] of Object.entries(init.query ?? {})) url.searchParams.set(k, v)
  const timeoutMs = init.timeoutMs ?? _TIMEOUT_MS
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), headers: { 'user-agent': _USER_AGENT, ...init.headers } })
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } }
    const detail = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message)
    throw new LapiUnreachable(`local API at ${getConfig().lapi.url} is unreachable: ${detail}`)
  }
}

function _unavailable(err: unknown): never {
  if (err instanceof LapiUnreachable) throw upstreamUnavailable('security engine', err.message.replace(/^local API/, 'its local API'))
  throw err
}

async function _login(): Promise<string> {
  const { machineId, machinePassword } = getConfig().lapi
  if (!machineId || !machinePassword)
    throw upstreamUnavailable('security engine', 'machine credentials are not configured (set LAPI_MACHINE_ID and LAPI_MACHINE_PASSWORD)')
  const res = await _send('v1/watchers/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ machine_id: machineId, password: machinePassword, scenarios: [] }),
  })
  if (res.status !== 200) throw await _engineError(res.status, await res.text())
  return (await res.json()).token as string
}

async function _machineToken(fresh: boolean): Promise<string> {
  if (_token && !fresh) return _token
  _loginInFlight ??= _login().finally(() => {
    _loginInFlight = undefined
  })
  _token = await _loginInFlight
  return _token
}

/** A machine (watcher) call: login once, retry once with a new token on 401. */
export async function machineRequest(
  method: string,
  path: string,
  opts: { query?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; json: any }> {
  try {
    for (let attempt = 0; ; attempt++) {
      const token = await _machineToken(attempt > 0)
      const res = await _send(path, {
        method,
        query: opts.query,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        headers: { authorization: `Bearer ${token}`, ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }) },
      })
      if (res.status === 401 && attempt === 0) continue
      const text = await res.text()
      let json: any = null
      try {
        json = text ? JSON.parse(text) : null
      } catch {
        json = text
      }
      return { status: res.status, json }
    }
  } catch (err) {
    _unavailable(err)
  }
}

/**
 * The key decision reads go with: the panel's own bouncer key when configured, else the
 * proxy's. A read with a bouncer's key moves that bouncer's last pull (docs/security-engine.md).
 */
function _readKey(): string | undefined {
  const { panelBouncerKey, bouncerKey } = getConfig().lapi
  return panelBouncerKey ?? bouncerKey
}

/** A bouncer call (decision reads). */
export async function bouncerRequest(path: string, query: Record<string, string> = {}, opts: { timeoutMs?: number } = {}): Promise<any> {
  const key = _readKey()
  if (!key)
    throw upstreamUnavailable('security engine', 'the bouncer key is not configured (set LAPI_BOUNCER_KEY or LAPI_PANEL_BOUNCER_KEY)')
  try {
    const res = await _send(path, { method: 'GET', query, timeoutMs: opts.timeoutMs, headers: { 'x-api-key': key } })
    const text = await res.text()
    if (res.status !== 200) throw await _engineError(res.status, text)
    return text ? JSON.parse(text) : null
  } catch (err) {
    _unavailable(err)
  }
}

/** Every scope the panel knows; the stream's default would be Ip and Range only. */
export const STREAM_SCOPES = 'ip,range,country,as'

/**
 * One pull of the decision stream with the panel's own key (never the proxy's: the
 * stream's delta is per bouncer). `startup`: every active decision; otherwise what
 * changed since this key's last pull. dedup=false: every decision by id, as GET
 * /v1/decisions lists them, not only the longest per value. Each decision goes to
 * `onDecision` as it is read from the answer: 500,000 of them are never held as
 * one text nor as one parsed array (docs/performance.md, memory).
 */
export async function pullDecisionStream(
  startup: boolean,
  onDecision: (kind: 'new' | 'deleted', decision: LapiDecision) => void,
  opts: { timeoutMs?: number } = {},
): Promise<void> {
  const key = getConfig().lapi.panelBouncerKey
  if (!key) throw new Error('LAPI_PANEL_BOUNCER_KEY is not configured')
  const res = await _send('v1/decisions/stream', {
    method: 'GET',
    timeoutMs: opts.timeoutMs,
    headers: { 'x-api-key': key },
    query: { startup: String(startup), scopes: STREAM_SCOPES, dedup: 'false' },
  })
  if (res.status !== 200) throw await _engineError(res.status, await res.text())
  try {
    await readTopLevelArrays(res.body, (member, element) => {
      if (member === 'new' || member === 'deleted') onDecision(member, element as LapiDecision)
    })
  } catch (err) {
    const e = err as Error
    if (e.name === 'TimeoutError' || e.name === 'AbortError')
      throw new LapiUnreachable(
        `local API at ${getConfig().lapi.url} is unreachable: the decision stream did not end within ${opts.timeoutMs ?? _TIMEOUT_MS} ms`,
      )
    throw new Error(`the local API's decision stream is not what the panel reads: ${e.message}`)
  }
}

/**
 * The body of POST /v1/alerts (machine route) that bans: one alert whose decisions all carry
 * `origin`, so one DELETE ?origin= revokes them. The panel's one alert builder: the manual ban
 * and the country chunks differ only in these options. `source` defaults to the first value.
 */
export function banAlert(opts: {
  scenario: string
  message: string
  origin: string
  scope: 'Ip' | 'Range'
  values: string[]
  duration: string
  source?: { scope: string; value: string; ip?: string; range?: string }
}) {
  const now = new Date().toISOString()
  return [
    {
      scenario: opts.scenario,
      scenario_hash: '',
      scenario_version: '',
      message: opts.message,
      events_count: 1,
      start_at: now,
      stop_at: now,
      capacity: 0,
      leakspeed: '0',
      simulated: false,
      events: [],
      source: opts.source ?? { scope: opts.scope, value: opts.values[0] },
      decisions: opts.values.map((value) => ({
        origin: opts.origin,
        type: 'ban',
        scope: opts.scope,
        value,
        duration: opts.duration,
        scenario: opts.scenario,
      })),
    },
  ]
}

/** Every active decision (the LAPI's null becomes []). */
export async function fetchActiveDecisions(query: Record<string, string> = {}): Promise<LapiDecision[]> {
  return (await bouncerRequest('v1/decisions', query)) ?? []
}

const _DELETE_FILTERS = ['scopes', 'value', 'type', 'ip', 'range', 'contains', 'scenario', 'origin']

/**
 * DELETE /v1/decisions with filters. An unfiltered call would expire EVERY
 * decision of the engine, so one without a real filter is refused here.
 */
export async function deleteDecisionsMatching(filter: Record<string, string>): Promise<number> {
  const keys = Object.keys(filter).filter((k) => filter[k] !== '' && k !== 'contains')
  if (!keys.length) throw new Error('refusing to send an unfiltered DELETE /v1/decisions (it would remove every decision)')
  for (const k of Object.keys(filter)) if (!_DELETE_FILTERS.includes(k)) throw new Error(`unknown decision filter ${k}`)
  const res = await machineRequest('DELETE', 'v1/decisions', { query: filter })
  if (res.status !== 200) throw await _engineError(res.status, JSON.stringify(res.json))
  return Number(res.json?.nbDeleted ?? 0)
}

/** DELETE /v1/decisions/{id}; an id that is already gone counts as success. */
export async function deleteDecisionById(id: number): Promise<'deleted' | 'already-gone'> {
  const res = await machineRequest('DELETE', `v1/decisions/${id}`)
  if (res.status === 200) return 'deleted'
  const message = String(res.json?.message ?? res.json ?? '')
  if (res.status === 404 || (res.status === 500 && /doesn't exist/.test(message))) return 'already-gone'
  throw await _engineError(res.status, message)
}

/** The health probe: GET /health needs no credentials. */
export async function probeEngine(opts: { timeoutMs?: number } = {}): Promise<{ up: boolean; error: string | null }> {
  try {
    const res = await _send('health', { method: 'GET', timeoutMs: opts.timeoutMs })
    return res.status === 200 ? { up: true, error: null } : { up: false, error: `health answered ${res.status}` }
  } catch (err) {
    return { up: false, error: (err as Error).message }
  }
}

function _isIpOrCidr(value: string): boolean {
  const [address, bits, extra] = value.split('/')
  const family = isIP(address ?? '')
  if (!family || extra !== undefined) return false
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128))
}

/** Whether the proxy's bouncer refuses this decision's value: Ip/Range, every type but throttle (answered 429), a value it parses. */
export function isRefusedSource(d: { scope: string; type: string; value: string }): boolean {
  return (
    ['ip', 'range'].includes(String(d.scope).toLowerCase()) && String(d.type).toLowerCase() !== 'throttle' && _isIpOrCidr(String(d.value))
  )
}

/**
 * The sources the bouncer refuses now, sorted and without repeats, read from the
 * local API (the decision mirror answers this without a read when configured).
 */
export async function fetchBannedSources(opts: { timeoutMs?: number } = {}): Promise<string[]> {
  const key = _readKey()
  if (!key) throw new Error('the bouncer key is not configured (set LAPI_BOUNCER_KEY)')
  const res = await _send('v1/decisions', { method: 'GET', headers: { 'x-api-key': key }, timeoutMs: opts.timeoutMs })
  const text = await res.text()
  if (res.status !== 200) throw await _engineError(res.status, text)
  const decisions = (text ? JSON.parse(text) : null) as LapiDecision[] | null
  const sources = new Set<string>()
  for (const d of decisions ?? []) if (isRefusedSource(d)) sources.add(String(d.value))
  return [...sources].sort()
}
