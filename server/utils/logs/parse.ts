import type { logs } from '../../../db/schema'

// One line of a proxy log -> one row of the logs table. Pure: host lookups and
// geolocation come in through `ctx`. A line that cannot be parsed becomes a row
// with its raw text: ingestion never stops on a bad line.

export type LogRow = typeof logs.$inferInsert
export type LogSource = 'caddy_access' | 'caddy_error' | 'waf_audit'
export interface ParseContext { hostIdOf(domain: string): number | null; countryOf(ip: string): string | null }

export const RAW_LIMIT_BYTES = 64 * 1024
const _SEVERITIES = ['EMERGENCY', 'ALERT', 'CRITICAL', 'ERROR', 'WARNING', 'NOTICE', 'INFO', 'DEBUG']

export function truncateRaw(line: string): string {
  return line.length > RAW_LIMIT_BYTES ? `${line.slice(0, RAW_LIMIT_BYTES)}…[truncated ${line.length - RAW_LIMIT_BYTES} chars]` : line
}

const _hostOnly = (host: string | undefined) => (host ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase()
const _header = (h: Record<string, string[]> | undefined, name: string) => {
  if (!h) return undefined
  const key = Object.keys(h).find((k) => k.toLowerCase() === name.toLowerCase())
  return key ? h[key]?.[0] : undefined
}
const _tsMs = (ts: unknown, fallback: number) => (typeof ts === 'number' ? Math.round(ts * 1000) : fallback)

function _unparsed(source: LogSource, line: string, nowMs: number, why: string): LogRow {
  return { tsMs: nowMs, source, level: 'error', message: `unparsed log line: ${why}`, raw: truncateRaw(line) }
}

/** Caddy access log (JSON, logger http.log.access[.host_<id>]). */
export function parseAccessLine(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  let e: any
  try { e = JSON.parse(line) } catch { return _unparsed('caddy_access', line, nowMs, 'not JSON') }
  if (!e || typeof e !== 'object' || !e.request) return _unparsed('caddy_access', line, nowMs, 'no request object')
  const req = e.request
  const domain = _hostOnly(req.host)
  const loggerHost = /\.host_(\d+)$/.exec(e.logger ?? '')
  const ruleId = Number(_header(e.resp_headers, 'X-Panel-Rule-Id'))
  const remoteIp = req.client_ip || req.remote_ip || null
  return {
    tsMs: _tsMs(e.ts, nowMs), source: 'caddy_access',
    hostId: loggerHost ? Number(loggerHost[1]) : ctx.hostIdOf(domain), hostDomain: domain || null,
    ruleId: Number.isInteger(ruleId) && ruleId > 0 ? ruleId : null,
    status: typeof e.status === 'number' ? e.status : null, method: req.method ?? null, path: req.uri ?? null,
    remoteIp, userAgent: _header(req.headers, 'User-Agent') ?? null, level: e.level ?? 'info', message: e.msg ?? null,
    raw: truncateRaw(line), durationMs: typeof e.duration === 'number' ? Number((e.duration * 1000).toFixed(3)) : null,
    country: remoteIp ? ctx.countryOf(remoteIp) : null,
  }
}

/** Caddy error log (logger http.log.error…): handler errors with the same request object. */
export function parseErrorLine(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  let e: any
  try { e = JSON.parse(line) } catch { return _unparsed('caddy_error', line, nowMs, 'not JSON') }
  if (!e || typeof e !== 'object') return _unparsed('caddy_error', line, nowMs, 'not an object')
  const req = e.request ?? {}
  const domain = _hostOnly(req.host)
  const remoteIp = req.client_ip || req.remote_ip || null
  return {
    tsMs: _tsMs(e.ts, nowMs), source: 'caddy_error', hostId: domain ? ctx.hostIdOf(domain) : null, hostDomain: domain || null,
    status: typeof e.status === 'number' ? e.status : null, method: req.method ?? null, path: req.uri ?? null, remoteIp,
    userAgent: _header(req.headers, 'User-Agent') ?? null, level: e.level ?? 'error', message: e.msg ?? null, raw: truncateRaw(line),
    durationMs: typeof e.duration === 'number' ? Number((e.duration * 1000).toFixed(3)) : null,
    country: remoteIp ? ctx.countryOf(remoteIp) : null,
  }
}

/** Coraza JSON audit log (proxy-and-engine.md A2): one row per transaction. */
export function parseWafLine(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  let e: any
  try { e = JSON.parse(line) } catch { return _unparsed('waf_audit', line, nowMs, 'not JSON') }
  const tx = e?.transaction
  if (!tx) return _unparsed('waf_audit', line, nowMs, 'no transaction')
  const messages: any[] = Array.isArray(e.messages) ? e.messages : []
  // The rule that mattered: the most severe one with a severity (0 = most severe); 949110 carries only the score.
  const ranked = messages.filter((m) => typeof m?.data?.id === 'number' && m.data.id !== 949110 && m.data.id !== 980170)
    .sort((a, b) => (a.data.severity < 0 ? 99 : a.data.severity) - (b.data.severity < 0 ? 99 : b.data.severity))
  const top = ranked[0]?.data
  const scoreText = messages.map((m) => m?.message ?? m?.data?.msg ?? '').find((t: string) => /Total Score: \d+/.test(t))
  const domain = _hostOnly(tx.server_id || tx.request?.headers?.host?.[0])
  const remoteIp = tx.client_ip || null
  return {
    tsMs: typeof tx.unix_timestamp === 'number' ? Math.round(tx.unix_timestamp / 1e6) : nowMs, source: 'waf_audit',
    hostId: domain ? ctx.hostIdOf(domain) : null, hostDomain: domain || null,
    status: tx.response?.status ?? null, method: tx.request?.method ?? null, path: tx.request?.uri ?? null, remoteIp,
    userAgent: tx.request?.headers?.['user-agent']?.[0] ?? null, level: tx.is_interrupted ? 'warn' : 'info',
    message: top?.msg ?? ranked[0]?.message ?? (tx.is_interrupted ? 'request blocked by the WAF' : 'WAF match'), raw: truncateRaw(line),
    wafRuleId: top?.id ?? null,
    wafSeverity: top && top.severity >= 0 && top.severity < 8 ? _SEVERITIES[top.severity]! : null,
    wafAnomalyScore: scoreText ? Number(/Total Score: (\d+)/.exec(scoreText)![1]) : null,
    country: remoteIp ? ctx.countryOf(remoteIp) : null,
  }
}

export const PARSERS: Record<LogSource, (line: string, ctx: ParseContext, nowMs?: number) => LogRow> = {
  caddy_access: parseAccessLine, caddy_error: parseErrorLine, waf_audit: parseWafLine,
}
export const LOG_FILES: Array<{ file: string; source: LogSource }> = [
  { file: 'access.log', source: 'caddy_access' }, { file: 'error.log', source: 'caddy_error' }, { file: 'waf-audit.log', source: 'waf_audit' },
]
