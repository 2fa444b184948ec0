import { and, inArray, or, sql, type SQL } from 'drizzle-orm'
import { badRequest } from '../core/errors'
import { ipToBigInt, parseCidr, endOf, type Net } from '../geo/ip'
import { compileSafeRegex, requiredLiteral } from './regex'
import { REQUEST_ID_PATTERN } from './parse'

// One filter compiler for the list, stats, timeseries and the live tail. The
// query string becomes SQL conditions with bound parameters, written with
// bare column names so that the same conditions also apply to the hourly
// roll-up tables (which share those column names), plus a JS predicate for
// the two things SQL cannot do here (a regular expression, CIDR membership).
// Those two are narrowed in SQL first (a literal the regex requires, the text
// prefix of the network) so that JS sees few rows.

export const SOURCES = ['caddy_access', 'caddy_error', 'audit', 'waf_audit', 'layer4'] as const
export type Dim =
  | 'source'
  | 'host'
  | 'rule_id'
  | 'status'
  | 'method'
  | 'path'
  | 'remote_ip'
  | 'level'
  | 'query'
  | 'waf_rule_id'
  | 'waf_severity'
  | 'node'
  | 'request_id'
  | 'actor'

/** A row as the API presents it (see present.ts); what the tail and the JS predicate see. */
export interface FilterableRow {
  ts: string
  source: string
  host_id: number | null
  host_domain: string | null
  rule_id: number | null
  status: number | null
  method: string | null
  path: string | null
  remote_ip: string | null
  user_agent: string | null
  level: string | null
  message: string | null
  raw: string | null
  waf_rule_id: number | null
  waf_severity: string | null
  node_id: number | null
  request_id: string | null
  actor: string | null
}

export interface CompiledFilter {
  /** Which filters are present (time aside). */
  dims: ReadonlySet<Dim>
  /** The filter's conditions without the time range (bare column names). */
  dimWhere: SQL | undefined
  /** Time range, epoch ms inclusive. */
  fromMs?: number
  toMs?: number
  /** dimWhere plus the time range, on the logs table. */
  where: SQL | undefined
  /** What every matching path contains (the `path` substring, or the literal a `re:` path requires): the path index narrows rows to it. */
  pathLiteral?: string
  /** The free-text (`query`) filter, when given: the text index narrows rows to it. */
  queryText?: string
  /** What SQL cannot check: run on the rows SQL returns. Null when SQL says it all. */
  predicate: ((row: FilterableRow) => boolean) | null
  /** The whole filter on one presented row (live tail). */
  matches(row: FilterableRow): boolean
}

const _col = (name: string) => sql`${sql.identifier(name)}`
const _list = (v: unknown): string[] => {
  if (v === undefined || v === null || v === '') return []
  const parts = Array.isArray(v) ? v.map(String) : [String(v)]
  return parts
    .flatMap((p) => p.split(','))
    .map((s) => s.trim())
    .filter(Boolean)
}
const _one = (v: unknown): string | undefined => {
  if (v === undefined || v === null || v === '') return undefined
  if (Array.isArray(v)) {
    if (v.length > 1) throw badRequest('a filter other than the lists (source, host_id, …) may be given only once')
    return v[0] === '' ? undefined : String(v[0])
  }
  return String(v)
}
function _ids(v: unknown, name: string): number[] {
  return _list(v).map((s) => {
    if (!/^[1-9]\d{0,9}$/.test(s)) throw badRequest(`${name}: must be positive integers separated by commas`)
    return Number(s)
  })
}

export function parseTime(v: unknown, name: string): number | undefined {
  const s = _one(v)
  if (s === undefined) return undefined
  const ms = /^\d{1,15}$/.test(s)
    ? Number(s)
    : /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.test(s)
      ? Date.parse(s)
      : Number.NaN
  if (!Number.isFinite(ms) || ms < 0 || ms > 8.64e15)
    throw badRequest(`${name}: must be an RFC 3339 time (2026-11-20T10:00:00Z) or epoch milliseconds`)
  return ms
}

/** status: 404 | 4xx | 500-504 | a comma list of those; every status within 100..599. */
export function parseStatusExpression(v: unknown): Array<[number, number]> {
  return _list(v).map((part): [number, number] => {
    let m: RegExpExecArray | null
    if ((m = /^([1-5])xx$/i.exec(part))) return [Number(m[1]) * 100, Number(m[1]) * 100 + 99]
    if ((m = /^([1-5]\d\d)-([1-5]\d\d)$/.exec(part)) && Number(m[1]) <= Number(m[2])) return [Number(m[1]), Number(m[2])]
    if (/^[1-5]\d\d$/.test(part)) return [Number(part), Number(part)]
    throw badRequest(`status: "${part}" is not a status (100-599), a class such as 4xx, or a range such as 500-504`)
  })
}

/**
 * The SQL text range holding every address of `net` as Caddy writes them
 * (dotted quads; RFC 5952 IPv6), from the groups the prefix fixes: 10.1.0.0/16
 * gives "10.1." .. "10.1/". Null when the prefix fixes nothing printable.
 */
export function cidrTextRange(net: Net): [string, string] | null {
  if (net.family === 4) {
    const octets = Math.floor(net.prefix / 8)
    if (octets === 0) return null
    const parts = [24n, 16n, 8n, 0n].slice(0, octets).map((s) => String(Number((net.start >> s) & 255n)))
    if (octets === 4) return [parts.join('.'), `${parts.join('.')}\u0001`]
    const p = `${parts.join('.')}.`
    return [p, `${p.slice(0, -1)}/`]
  }
  const groups: string[] = []
  for (let i = 0; i < Math.floor(net.prefix / 16); i++) {
    const g = Number((net.start >> BigInt(112 - 16 * i)) & 0xffffn)
    if (g === 0) break // a zero group may be printed as "::": stop before it
    groups.push(g.toString(16))
  }
  if (!groups.length) return null
  const p = `${groups.join(':')}:`
  return [p, `${p.slice(0, -1)};`]
}

/** What the dimensions add up to while a filter is compiled. */
interface _Builder {
  conds: SQL[]
  dims: Set<Dim>
  /** What SQL cannot check (the predicate); run on the rows SQL returns. */
  jsChecks: Array<(r: FilterableRow) => boolean>
  /** What SQL checks, again in JS for the live tail. */
  tail: Array<(r: FilterableRow) => boolean>
  pathLiteral?: string
  queryText?: string
}

type _Column = 'source' | 'rule_id' | 'method' | 'level' | 'waf_rule_id' | 'waf_severity' | 'node_id' | 'request_id' | 'actor'

/** A dimension that is a list of values one column must be among. */
function _among<T extends string | number>(b: _Builder, dim: Dim, column: _Column, values: T[]): void {
  if (!values.length) return
  b.dims.add(dim)
  b.conds.push(inArray(_col(column), values))
  b.tail.push((r) => r[column] !== null && (values as Array<string | number>).includes(r[column]))
}

/** Upper-cased names, each refused unless it looks like `what`. */
function _names(v: unknown, field: string, what: string): string[] {
  const names = _list(v).map((s) => s.toUpperCase())
  for (const n of names) if (!/^[A-Z]{1,16}$/.test(n)) throw badRequest(`${field}: "${n}" is not ${what}`)
  return names
}

/** Request ids as a refusal page shows them, lower-cased (Caddy writes them so). */
function _requestIds(v: unknown): string[] {
  const ids = _list(v).map((s) => s.toLowerCase())
  for (const id of ids)
    if (!REQUEST_ID_PATTERN.test(id))
      throw badRequest(`request_id: "${id.slice(0, 40)}" is not a request id such as 5cef7b46-a205-4554-9705-f7140937654b`)
  return ids
}

function _sourceDim(q: Record<string, unknown>, b: _Builder): void {
  const sources = _list(q.source)
  for (const s of sources)
    if (!(SOURCES as readonly string[]).includes(s)) throw badRequest(`source: "${s}" is not one of ${SOURCES.join(', ')}`)
  _among(b, 'source', 'source', sources)
}

function _hostDim(q: Record<string, unknown>, b: _Builder): void {
  const hostIds = _ids(q.host_id, 'host_id')
  const domains = _list(q.host_domain).map((d) => d.toLowerCase())
  if (!hostIds.length && !domains.length) return
  b.dims.add('host')
  b.conds.push(
    or(hostIds.length ? inArray(_col('host_id'), hostIds) : undefined, domains.length ? inArray(_col('host_domain'), domains) : undefined)!,
  )
  b.tail.push((r) => (r.host_id !== null && hostIds.includes(r.host_id)) || (r.host_domain !== null && domains.includes(r.host_domain)))
}

function _statusDim(q: Record<string, unknown>, b: _Builder): void {
  const statuses = parseStatusExpression(q.status)
  if (!statuses.length) return
  b.dims.add('status')
  b.conds.push(or(...statuses.map(([a, z]) => (a === z ? sql`${_col('status')} = ${a}` : sql`${_col('status')} BETWEEN ${a} AND ${z}`)))!)
  b.tail.push((r) => r.status !== null && statuses.some(([a, z]) => r.status! >= a && r.status! <= z))
}

function _pathDim(q: Record<string, unknown>, b: _Builder): void {
  const path = _one(q.path)
  if (path === undefined) return
  b.dims.add('path')
  if (!path.startsWith('re:')) {
    b.conds.push(sql`instr(${_col('path')}, ${path}) > 0`)
    b.tail.push((r) => r.path?.includes(path) === true)
    b.pathLiteral = path
    return
  }
  const re = compileSafeRegex(path.slice(3))
  const literal = requiredLiteral(path.slice(3))
  if (literal) {
    b.conds.push(sql`instr(${_col('path')}, ${literal}) > 0`)
    b.pathLiteral = literal
  }
  b.jsChecks.push((r) => r.path !== null && re.test(r.path))
}

function _cidrOf(ip: string): Net {
  let net: Net
  try {
    net = parseCidr(ip)
  } catch {
    throw badRequest(`remote_ip: "${ip}" is not a valid CIDR such as 10.0.0.0/8 or 2001:db8::/32`)
  }
  const prefixText = ip.split('/')[1] ?? ''
  if (!/^\d{1,3}$/.test(prefixText) || net.prefix > (net.family === 4 ? 32 : 128))
    throw badRequest(`remote_ip: "${ip}" has an invalid prefix length`)
  return net
}

function _remoteIpDim(q: Record<string, unknown>, b: _Builder): void {
  const ip = _one(q.remote_ip)
  if (ip === undefined) return
  b.dims.add('remote_ip')
  if (!ip.includes('/')) {
    b.conds.push(sql`instr(${_col('remote_ip')}, ${ip}) > 0`)
    b.tail.push((r) => r.remote_ip?.includes(ip) === true)
    return
  }
  const net = _cidrOf(ip)
  const range = cidrTextRange(net)
  if (range) b.conds.push(sql`${_col('remote_ip')} >= ${range[0]} AND ${_col('remote_ip')} < ${range[1]}`)
  const end = endOf(net)
  b.jsChecks.push((r) => {
    if (!r.remote_ip) return false
    try {
      const a = ipToBigInt(r.remote_ip)
      return a.family === net.family && a.value >= net.start && a.value <= end
    } catch {
      return false
    }
  })
}

function _queryDim(q: Record<string, unknown>, b: _Builder): void {
  const text = _one(q.query)
  if (text === undefined) return
  b.dims.add('query')
  b.conds.push(
    sql`(instr(${_col('path')}, ${text}) > 0 OR instr(${_col('user_agent')}, ${text}) > 0 OR instr(${_col('message')}, ${text}) > 0 OR instr(${_col('raw')}, ${text}) > 0)`,
  )
  b.tail.push((r) => [r.path, r.user_agent, r.message, r.raw].some((f) => f?.includes(text)))
  b.queryText = text
}

/**
 * The filter's dimensions, one row each, in the order their parameters are checked (the first
 * bad one is the one reported). A new filter is a new row here and a new `Dim`.
 */
const _DIMENSIONS: Array<(q: Record<string, unknown>, b: _Builder) => void> = [
  _sourceDim,
  _hostDim,
  (q, b) => _among(b, 'rule_id', 'rule_id', _ids(q.rule_id, 'rule_id')),
  _statusDim,
  (q, b) => _among(b, 'method', 'method', _names(q.method, 'method', 'an HTTP method')),
  _pathDim,
  _remoteIpDim,
  (q, b) =>
    _among(
      b,
      'level',
      'level',
      _list(q.level).map((l) => l.toLowerCase()),
    ),
  _queryDim,
  (q, b) => _among(b, 'waf_rule_id', 'waf_rule_id', _ids(q.waf_rule_id, 'waf_rule_id')),
  (q, b) => _among(b, 'waf_severity', 'waf_severity', _names(q.waf_severity, 'waf_severity', 'a severity name such as CRITICAL')),
  // No roll-up carries the node: a node filter is answered from the rows (stats.ts).
  (q, b) => _among(b, 'node', 'node_id', _ids(q.node_id, 'node_id')),
  // The id a refusal page shows (exact, lower case): no roll-up carries it either.
  (q, b) => _among(b, 'request_id', 'request_id', _requestIds(q.request_id)),
  // The signed-in user of an admitted request on a protected host (exact; logs_actor_ts_idx): no roll-up carries it.
  (q, b) => _among(b, 'actor', 'actor', _list(q.actor)),
]

export function compileLogFilter(q: Record<string, unknown>): CompiledFilter {
  const b: _Builder = { conds: [], dims: new Set<Dim>(), jsChecks: [], tail: [] }
  for (const dimension of _DIMENSIONS) dimension(q, b)
  const { conds, jsChecks, tail } = b

  const fromMs = parseTime(q.from, 'from'),
    toMs = parseTime(q.to, 'to')
  if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) throw badRequest('from: must not be after to')
  const timeConds = [
    fromMs !== undefined ? sql`${_col('ts_ms')} >= ${fromMs}` : undefined,
    toMs !== undefined ? sql`${_col('ts_ms')} <= ${toMs}` : undefined,
  ].filter((c): c is SQL => !!c)
  if (fromMs !== undefined || toMs !== undefined)
    tail.push((r) => {
      const t = Date.parse(r.ts)
      return (fromMs === undefined || t >= fromMs) && (toMs === undefined || t <= toMs)
    })

  const predicate = jsChecks.length ? (r: FilterableRow) => jsChecks.every((c) => c(r)) : null
  const all = [...tail, ...jsChecks]
  return {
    dims: b.dims,
    fromMs,
    toMs,
    predicate,
    pathLiteral: b.pathLiteral,
    queryText: b.queryText,
    dimWhere: conds.length ? and(...conds) : undefined,
    where: conds.length || timeConds.length ? and(...conds, ...timeConds) : undefined,
    matches: (r) => all.every((c) => c(r)),
  }
}
