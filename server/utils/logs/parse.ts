import type { logs } from '../../../db/schema'
import { SESSION_COOKIE } from '../auth/session-cookie'

// One line of a proxy log -> one row of the logs table. Pure: host lookups and
// geolocation come in through `ctx`. A line that cannot be parsed becomes a row
// with its raw text, and every field is checked for its type and length, so
// that no line, however odd, can make the insert fail and stall ingestion.

export type LogRow = typeof logs.$inferInsert
export type LogSource = 'caddy_access' | 'caddy_error' | 'waf_audit' | 'layer4'
export interface ParseContext {
  hostIdOf(domain: string): number | null
  countryOf(ip: string): string | null
  /** The client's AS number (asn.mmdb) for access rows; absent or null: none known. */
  asnOf?(ip: string): number | null
  /** A stream's name by id (layer4 rows); absent or null: the row keeps the id only. */
  streamNameOf?(id: number): string | null
}

/** `raw` keeps at most this many characters of a line. */
export const RAW_LIMIT_CHARS = 64 * 1024
/** Longest stored path, user agent, message. */
export const FIELD_LIMITS = { path: 4096, userAgent: 1024, message: 4096, domain: 253, ip: 64, method: 16, level: 16 } as const

/** Coraza severities 0..7 by their names (proxy-and-engine.md A2). */
export const WAF_SEVERITIES = ['EMERGENCY', 'ALERT', 'CRITICAL', 'ERROR', 'WARNING', 'NOTICE', 'INFO', 'DEBUG'] as const

// Timestamps outside 2000..2100 are not believed: the row gets the ingestion time.
const _MIN_TS_MS = 946_684_800_000
const _MAX_TS_MS = 4_102_444_800_000
// Rule ids of CRS's scoring rules: they carry the anomaly score, not the attack.
const _SCORE_RULES = new Set([949110, 949111, 959100, 980170, 980130])
/** The anomaly points CRS adds per severity (crs-setup.conf's defaults, which the panel keeps). */
const _SEVERITY_SCORE: Record<string, number> = { CRITICAL: 5, ERROR: 4, WARNING: 3, NOTICE: 2 }
/** A row keeps at most this many matched rules, each message at most this long (a bounded column). */
export const WAF_RULES_LIMIT = 64
const _WAF_RULE_MSG_CHARS = 200
/** What coraza-caddy answers for a `deny` without `status:` (Coraza's deny action defaults to 403). */
const _DENY_DEFAULT_STATUS = 403

/** Caddy's request id: a UUID in its canonical lower-case text (anything else in `uuid` is not stored). */
export const REQUEST_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export function truncateRaw(line: string): string {
  return line.length > RAW_LIMIT_CHARS ? `${line.slice(0, RAW_LIMIT_CHARS)}…[truncated ${line.length - RAW_LIMIT_CHARS} chars]` : line
}

const _str = (v: unknown, max: number): string | null => {
  if (typeof v === 'number' && Number.isFinite(v)) v = String(v)
  if (typeof v !== 'string' || v === '') return null
  return v.length > max ? v.slice(0, max) : v
}
const _int = (v: unknown, min: number, max: number): number | null =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : null
const _obj = (v: unknown): Record<string, any> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, any>) : undefined

function _tsMs(ms: unknown, fallback: number): number {
  return typeof ms === 'number' && ms >= _MIN_TS_MS && ms <= _MAX_TS_MS ? Math.round(ms) : fallback
}
/** Seconds (float) -> milliseconds with microsecond precision. */
function _durationMs(seconds: unknown): number | null {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0 || seconds > 1e6) return null
  return Math.round(seconds * 1e6) / 1000
}
/** The Host header without port or IPv6 brackets, lower case. */
export function domainOf(host: unknown): string | null {
  const h = _str(host, 300)
  if (!h) return null
  const d = h
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
  return d && d.length <= FIELD_LIMITS.domain ? d : null
}
function _header(h: unknown, name: string): string | null {
  const headers = _obj(h)
  if (!headers) return null
  const direct = headers[name]
  const values = direct ?? headers[Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase()) ?? '']
  return Array.isArray(values) ? _str(values[0], 8192) : _str(values, 8192)
}
const _level = (v: unknown, fallback: string) => _str(v, FIELD_LIMITS.level)?.toLowerCase() ?? fallback
const _hostIdOfLogger = (logger: unknown) => {
  const m = typeof logger === 'string' ? /\.host_(\d{1,9})$/.exec(logger) : null
  return m ? Number(m[1]) : null
}

function _unparsed(source: LogSource, line: string, nowMs: number, why: string): LogRow {
  return { tsMs: nowMs, source, level: 'error', message: `unparsed log line: ${why}`, raw: truncateRaw(line) }
}

/** The request fields Caddy's access and error lines share (proxy-and-engine.md A7). */
function _requestFields(request: unknown, ctx: ParseContext) {
  const req = _obj(request) ?? {}
  const remoteIp = _str(req.client_ip, FIELD_LIMITS.ip) ?? _str(req.remote_ip, FIELD_LIMITS.ip)
  return {
    hostDomain: domainOf(req.host),
    method: _str(req.method, FIELD_LIMITS.method)?.toUpperCase() ?? null,
    path: _str(req.uri, FIELD_LIMITS.path),
    remoteIp,
    userAgent: _str(_header(req.headers, 'User-Agent'), FIELD_LIMITS.userAgent),
    country: remoteIp ? ctx.countryOf(remoteIp) : null,
  }
}

function _parseJson(line: string): Record<string, any> | string {
  let e: unknown
  try {
    e = JSON.parse(line)
  } catch {
    return 'not JSON'
  }
  return _obj(e) ?? 'not a JSON object'
}

/** Caddy access log (JSON, logger http.log.access[.host_<id>]). */
export function parseAccessLine(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  const e = _parseJson(line)
  if (typeof e === 'string') return _unparsed('caddy_access', line, nowMs, e)
  if (!_obj(e.request)) return _unparsed('caddy_access', line, nowMs, 'no request object')
  const req = _requestFields(e.request, ctx)
  const ruleTag = _header(e.resp_headers, 'X-Panel-Rule-Id')
  const actor = actorOfUserId(e.user_id)
  return {
    tsMs: _tsMs(typeof e.ts === 'number' ? e.ts * 1000 : undefined, nowMs),
    source: 'caddy_access',
    hostId: _hostIdOfLogger(e.logger) ?? (req.hostDomain ? ctx.hostIdOf(req.hostDomain) : null),
    ...req,
    ruleId: ruleTag && /^[1-9]\d{0,9}$/.test(ruleTag) && Number(ruleTag) < 2 ** 31 ? Number(ruleTag) : null,
    // The replay of a geo policy counts access rows by network (docs/access-control.md).
    asn: req.remoteIp ? (ctx.asnOf?.(req.remoteIp) ?? null) : null,
    status: _int(e.status, 0, 999),
    level: _level(e.level, 'info'),
    message: _str(e.msg, FIELD_LIMITS.message),
    raw: truncateRaw(line),
    durationMs: _durationMs(e.duration),
    // Caddy adds `uuid` to the access line only when {http.request.uuid} was used while handling the request
    // (the refusal pages use it; Caddy >= 2.8), so most rows have none.
    requestId: typeof e.uuid === 'string' && REQUEST_ID_PATTERN.test(e.uuid) ? e.uuid : null,
    // The signed-in user a protected host admitted: the panel's X-Auth-User, which the ForwardAuth
    // step hands to Caddy's user id (build/forward-auth.ts), so "who opened /admin" is one filter.
    ...(actor ? { actor } : {}),
  }
}

/** Caddy's `user_id` as logs.actor: the X-Auth-User value decoded (docs/auth.md, its encoding); empty is none. */
export function actorOfUserId(value: unknown): string | null {
  const raw = _str(value, 1024)
  if (!raw) return null
  if (!raw.startsWith("UTF-8''")) return raw.slice(0, 320)
  try {
    return decodeURIComponent(raw.slice(7)).slice(0, 320)
  } catch {
    return raw.slice(0, 320)
  }
}

/**
 * Caddy error log (logger http.log.error[.host_<id>]): handler errors with the same request object;
 * also certificate lines (tls.obtain/tls.renew, whose `identifier` names the host) and health-check lines.
 */
export function parseErrorLine(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  const e = _parseJson(line)
  if (typeof e === 'string') return _unparsed('caddy_error', line, nowMs, e)
  const req = _requestFields(e.request, ctx)
  if (!req.hostDomain && typeof e.logger === 'string' && e.logger.startsWith('tls.')) req.hostDomain = domainOf(e.identifier)
  return {
    tsMs: _tsMs(typeof e.ts === 'number' ? e.ts * 1000 : undefined, nowMs),
    source: 'caddy_error',
    hostId: _hostIdOfLogger(e.logger) ?? (req.hostDomain ? ctx.hostIdOf(req.hostDomain) : null),
    ...req,
    status: _int(e.status, 0, 999),
    level: _level(e.level, 'error'),
    message: _str(e.msg, FIELD_LIMITS.message),
    raw: truncateRaw(line),
    durationMs: _durationMs(e.duration),
  }
}

interface _WafMatch {
  id: number
  severity: number
  msg: string | null
  raw: string
}

/**
 * A matched rule of a Coraza audit entry: from `data` (audit log part K) or,
 * without part K, from the text form in `error_message` ([id "…"] [severity "…"]).
 */
function _wafMatch(m: unknown): _WafMatch | null {
  const o = _obj(m)
  if (!o) return null
  const data = _obj(o.data)
  if (data && _int(data.id, 1, 2 ** 31) !== null) {
    const sev = _int(data.severity, -1, 7) ?? -1
    return {
      id: data.id,
      severity: sev,
      msg: _str(data.msg, FIELD_LIMITS.message) ?? _str(o.message, FIELD_LIMITS.message),
      raw: typeof data.raw === 'string' ? data.raw : '',
    }
  }
  const text = typeof o.error_message === 'string' ? o.error_message : ''
  const id = /\[id "(\d{1,10})"\]/.exec(text)
  if (!id) return null
  const sevName = /\[severity "([a-z]+)"\]/i.exec(text)?.[1]?.toUpperCase()
  const sev = sevName ? WAF_SEVERITIES.indexOf(sevName as (typeof WAF_SEVERITIES)[number]) : -1
  return { id: Number(id[1]), severity: sev, msg: /\[msg "([^"]*)"\]/.exec(text)?.[1] ?? _str(o.message, FIELD_LIMITS.message), raw: '' }
}

/** One rule a request matched, as a waf_audit row stores it (logs.waf_rules, JSON). */
export interface WafRuleHit {
  id: number
  severity: string | null
  /** Points added to the inbound anomaly score (0: a scoring, reporting or response rule). */
  score: number
  msg: string | null
}

/**
 * What a matched rule adds to the inbound anomaly score. A CRS rule's own text says it
 * (`setvar:'tx.inbound_anomaly_score_pl1=+%{tx.critical_anomaly_score}'`) when it is not a
 * chain, whose setvar sits on its last link and is not in `raw`; then its severity
 * decides, as CRS's scores follow severity. Response rules (95x) add to the outbound score
 * and the evaluation and reporting rules add nothing.
 */
function _inboundScore(m: _WafMatch): number {
  if (_SCORE_RULES.has(m.id) || (m.id >= 950000 && m.id < 960000) || (m.id >= 980000 && m.id < 990000)) return 0
  const own = /inbound_anomaly_score_pl\d=\+%\{tx\.(critical|error|warning|notice)_anomaly_score\}/i.exec(m.raw)
  if (own) return _SEVERITY_SCORE[own[1]!.toUpperCase()]!
  if (/outbound_anomaly_score/.test(m.raw)) return 0
  return m.severity >= 0 ? (_SEVERITY_SCORE[WAF_SEVERITIES[m.severity]!] ?? 0) : 0
}

/** Every matched rule once (Coraza logs a rule again for each variable it matched), in match order. */
function _ruleHits(matches: _WafMatch[]): WafRuleHit[] {
  const seen = new Map<number, WafRuleHit>()
  for (const m of matches) {
    if (seen.has(m.id) || seen.size >= WAF_RULES_LIMIT) continue
    seen.set(m.id, {
      id: m.id,
      severity: m.severity >= 0 ? WAF_SEVERITIES[m.severity]! : null,
      score: _inboundScore(m),
      msg: m.msg === null ? null : m.msg.replace(_SESSION_VALUE, '$1REDACTED').slice(0, _WAF_RULE_MSG_CHARS),
    })
  }
  return [...seen.values()]
}

/**
 * The status the client got for an interrupted transaction. Coraza's audit entry has no
 * interruption status (its response status is 0, or the upstream's when the response phase
 * interrupted); coraza-caddy answers a `deny` with the rule's `status:` or 403. A logged rule
 * with `deny` in an interrupted transaction is the one that interrupted (deny stops
 * evaluation at once), so its own `status:` is read from its text; a status inherited from
 * SecDefaultAction is not visible there (the panel's configuration sets none).
 */
function _interruptionStatus(matches: _WafMatch[]): number {
  // The rule's action list: its last double-quoted argument, with 'quoted' values (msg, tag) blanked.
  const actions = (raw: string) => (/"([^"]*)"\s*$/.exec(raw)?.[1] ?? '').replace(/'[^']*'/g, "''")
  const deny = matches
    .map((m) => actions(m.raw))
    .filter((a) => /(?:^|,)\s*deny\s*(?:,|$)/.test(a))
    .at(-1)
  const status = deny ? /(?:^|,)\s*status:([1-5]\d\d)\s*(?:,|$)/.exec(deny) : null
  return status ? Number(status[1]) : _DENY_DEFAULT_STATUS
}

/** Headers whose values are credentials: Caddy's access log redacts the same ones (its `log_credentials` off). */
const _CREDENTIAL_HEADERS = new Set(['cookie', 'set-cookie', 'authorization', 'proxy-authorization'])
const _SESSION_VALUE = new RegExp(`(${SESSION_COOKIE}=)${String.raw`[^;"\\\s]+`}`, 'g')

/**
 * Coraza's audit log keeps the request's and the response's headers whole (parts B
 * and F), so a blocked request of a signed-in operator held the panel's session
 * token, and one to a basic-auth host its password: readable by every viewer of
 * the logs. The row keeps the line with those values replaced by "REDACTED", and
 * the session token also wherever else the line quotes it (a rule's matched data).
 */
function _redactWafCredentials(e: Record<string, any>, tx: Record<string, any>): string {
  for (const part of [_obj(tx.request), _obj(tx.response)]) {
    const headers = _obj(part?.headers)
    if (!headers) continue
    for (const name of Object.keys(headers)) if (_CREDENTIAL_HEADERS.has(name.toLowerCase())) headers[name] = ['REDACTED']
  }
  return JSON.stringify(e).replace(_SESSION_VALUE, '$1REDACTED')
}

/** Coraza JSON audit log (proxy-and-engine.md A2): one row per transaction. */
export function parseWafLine(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  const e = _parseJson(line)
  if (typeof e === 'string') return _unparsed('waf_audit', line, nowMs, e)
  const tx = _obj(e.transaction)
  if (!tx) return _unparsed('waf_audit', line, nowMs, 'no transaction object')
  const request = _obj(tx.request) ?? {}
  const messages: unknown[] = Array.isArray(e.messages) ? e.messages : []
  const matches = messages.map(_wafMatch).filter((m): m is _WafMatch => m !== null)
  // The rule that mattered: the most severe attack rule (0 = most severe, -1 = none);
  // the scoring rules only when nothing else matched.
  const rank = (m: _WafMatch) => (m.severity < 0 ? 99 : m.severity) + (_SCORE_RULES.has(m.id) ? 1000 : 0)
  const top = matches.reduce<_WafMatch | null>((best, m) => (!best || rank(m) < rank(best) ? m : best), null)
  const texts = messages.map((m) => {
    const o = _obj(m)
    return `${o?.message ?? ''} ${_obj(o?.data)?.msg ?? ''} ${o?.error_message ?? ''}`
  })
  const score = texts.map((t) => /Total Score: (\d{1,9})/.exec(t)).find(Boolean)
  const remoteIp = _str(tx.client_ip, FIELD_LIMITS.ip)
  const hostDomain = domainOf(tx.server_id) ?? domainOf(_header(request.headers, 'host'))
  const interrupted = tx.is_interrupted === true
  // What the client got: the interruption's answer when blocked, else the response's status
  // (200 in detection mode, where nothing is interrupted).
  const status = interrupted ? _interruptionStatus(matches) : _int(_obj(tx.response)?.status, 0, 999)
  return {
    tsMs: _tsMs(typeof tx.unix_timestamp === 'number' ? tx.unix_timestamp / 1e6 : undefined, nowMs),
    source: 'waf_audit',
    hostId: hostDomain ? ctx.hostIdOf(hostDomain) : null,
    hostDomain,
    status,
    method: _str(request.method, FIELD_LIMITS.method)?.toUpperCase() ?? null,
    path: _str(request.uri, FIELD_LIMITS.path),
    remoteIp,
    userAgent: _str(_header(request.headers, 'user-agent'), FIELD_LIMITS.userAgent),
    level: interrupted ? 'warn' : 'info',
    message: (top?.msg ?? (interrupted ? 'request blocked by the WAF' : 'WAF rule matched')).replace(_SESSION_VALUE, '$1REDACTED'),
    raw: truncateRaw(_redactWafCredentials(e, tx)),
    wafRuleId: top?.id ?? null,
    wafSeverity: top && top.severity >= 0 ? WAF_SEVERITIES[top.severity]! : null,
    wafAnomalyScore: score ? Number(score[1]) : null,
    wafRules: matches.length ? JSON.stringify(_ruleHits(matches)) : null,
    country: remoteIp ? ctx.countryOf(remoteIp) : null,
  }
}

/** The client's address of "ip:port" or "[v6]:port" (the layer-4 handlers log addresses with their port). */
function _hostOfAddr(addr: string | null): string | null {
  if (!addr) return null
  const m = /^\[([^\]]+)\]:\d+$/.exec(addr) ?? /^([^:]+):\d+$/.exec(addr)
  return _str(m ? m[1] : addr, FIELD_LIMITS.ip)
}
const _bytes = (v: unknown) => _int(v, 0, Number.MAX_SAFE_INTEGER)

/**
 * A stream's line (docs/streams.md "Connection rows"): "connection closed" of the connection log
 * handler (streamext/connlog.go: bytes each way, duration, the close reason as the message) or
 * "connection refused" of the refusal handler (streamext/refuse.go: the reason; level warn).
 */
export function parseLayer4Line(line: string, ctx: ParseContext, nowMs = Date.now()): LogRow {
  const e = _parseJson(line)
  if (typeof e === 'string') return _unparsed('layer4', line, nowMs, e)
  const streamId = _int(e.stream_id, 1, 2 ** 31)
  const remoteIp = _hostOfAddr(_str(e.remote, 300))
  const refused = e.msg === 'connection refused'
  const reason = _str(e.reason, FIELD_LIMITS.message)
  return {
    tsMs: _tsMs(typeof e.ts === 'number' ? e.ts * 1000 : undefined, nowMs),
    source: 'layer4',
    streamId,
    streamName: streamId !== null ? (ctx.streamNameOf?.(streamId) ?? null) : null,
    remoteIp,
    country: remoteIp ? ctx.countryOf(remoteIp) : null,
    upstream: _str(e.upstream, 300),
    bytesIn: _bytes(e.bytes_in),
    bytesOut: _bytes(e.bytes_out),
    durationMs: _durationMs(e.duration),
    // A refusal is the operator's business (a ban, the LAN gate); a closed connection is traffic.
    level: refused ? 'warn' : _level(e.level, 'info'),
    message: refused
      ? `refused: ${reason ?? 'no reason given'}`
      : e.msg === 'connection closed'
        ? (reason ?? 'closed')
        : _str(e.msg, FIELD_LIMITS.message),
    raw: truncateRaw(line),
  }
}

export const PARSERS: Record<LogSource, (line: string, ctx: ParseContext, nowMs?: number) => LogRow> = {
  caddy_access: parseAccessLine,
  caddy_error: parseErrorLine,
  waf_audit: parseWafLine,
  layer4: parseLayer4Line,
}

/** The files the generated proxy configuration writes into PROXY_LOG_DIR, and what each holds. */
export const LOG_FILES: ReadonlyArray<{ file: string; source: LogSource }> = [
  { file: 'access.log', source: 'caddy_access' },
  { file: 'error.log', source: 'caddy_error' },
  { file: 'waf-audit.log', source: 'waf_audit' },
  // Written only when streams exist (proxy/build/logging.ts); a missing file is read as empty.
  { file: 'layer4.log', source: 'layer4' },
]
