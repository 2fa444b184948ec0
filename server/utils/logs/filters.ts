import { and, gte, inArray, lte, or, sql, type SQL } from 'drizzle-orm'
import { logs } from '../../../db/schema'
import { badRequest } from '../core/errors'
import { endOf, ipToBigInt, parseCidr } from '../geo/ip'
import type { PresentedLog } from './hub'

// One filter compiler for the list, stats, timeseries and tail: the query
// string becomes SQL conditions (bound parameters only) plus, for what SQL here
// cannot do (regular expressions, CIDR membership), a JS predicate applied to
// the rows SQL returns.

export const SOURCES = ['caddy_access', 'caddy_error', 'audit', 'waf_audit'] as const
type Row = { source: string; host_id?: unknown; [k: string]: unknown }
export interface CompiledFilter { where: SQL | undefined; predicate: ((row: Row) => boolean) | null; matches(row: PresentedLog): boolean }

const _list = (v: unknown): string[] => (v === undefined || v === '' ? [] : String(v).split(',').map((s) => s.trim()).filter(Boolean))
const _ints = (v: unknown, name: string) => _list(v).map((s) => { if (!/^\d{1,12}$/.test(s)) throw badRequest(`${name}: must be integers separated by commas`); return Number(s) })

export function parseTime(v: unknown, name: string): number | undefined {
  if (v === undefined || v === '') return undefined
  const s = String(v)
  const ms = /^\d{10,14}$/.test(s) ? Number(s) : Date.parse(s)
  if (!Number.isFinite(ms) || (!/^\d+$/.test(s) && !/^\d{4}-\d{2}-\d{2}T/.test(s))) throw badRequest(`${name}: must be an RFC 3339 time or epoch milliseconds`)
  return ms
}

/** status: 404 | 4xx | 500-504 | a comma list of those. */
export function parseStatusExpression(v: unknown): Array<[number, number]> {
  return _list(v).map((part) => {
    let m: RegExpExecArray | null
    if ((m = /^([1-5])xx$/i.exec(part))) return [Number(m[1]) * 100, Number(m[1]) * 100 + 99]
    if ((m = /^(\d{3})-(\d{3})$/.exec(part)) && Number(m[1]) <= Number(m[2])) return [Number(m[1]), Number(m[2])]
    if (/^\d{3}$/.test(part)) return [Number(part), Number(part)]
    throw badRequest(`status: "${part}" is not a status, a class such as 4xx, or a range such as 500-504`)
  })
}

/** Regular expressions from clients run on our CPU: short, and without nested quantifiers. */
export function compileSafeRegex(pattern: string): RegExp {
  if (pattern.length > 200) throw badRequest('path: the regular expression must be at most 200 characters')
  if (/\([^)]*[+*}][^)]*\)\s*[+*{]/.test(pattern) || /\\[1-9]/.test(pattern))
    throw badRequest('path: nested quantifiers and back-references are refused (they can take exponential time)')
  try { return new RegExp(pattern) } catch (err) { throw badRequest(`path: invalid regular expression: ${(err as Error).message}`) }
}

export function compileLogFilter(q: Record<string, unknown>): CompiledFilter {
  const conds: SQL[] = []
  const jsChecks: Array<(r: Row) => boolean> = []
  const sources = _list(q.source)
  for (const s of sources) if (!(SOURCES as readonly string[]).includes(s)) throw badRequest(`source: "${s}" is not one of ${SOURCES.join(', ')}`)
  if (sources.length) conds.push(inArray(logs.source, sources as (typeof SOURCES)[number][]))
  const hostIds = _ints(q.host_id, 'host_id'), domains = _list(q.host_domain).map((d) => d.toLowerCase())
  if (hostIds.length || domains.length) conds.push(or(...[hostIds.length ? inArray(logs.hostId, hostIds) : undefined, domains.length ? inArray(logs.hostDomain, domains) : undefined].filter(Boolean) as SQL[])!)
  const ruleIds = _ints(q.rule_id, 'rule_id')
  if (ruleIds.length) conds.push(inArray(logs.ruleId, ruleIds))
  const statuses = parseStatusExpression(q.status)
  if (statuses.length) conds.push(or(...statuses.map(([a, b]) => (a === b ? sql`${logs.status} = ${a}` : sql`${logs.status} BETWEEN ${a} AND ${b}`)))!)
  const methods = _list(q.method).map((m) => m.toUpperCase())
  for (const m of methods) if (!/^[A-Z]{1,16}$/.test(m)) throw badRequest(`method: "${m}" is not an HTTP method`)
  if (methods.length) conds.push(inArray(logs.method, methods))
  if (q.path !== undefined && q.path !== '') {
    const path = String(q.path)
    if (path.startsWith('re:')) { const re = compileSafeRegex(path.slice(3)); jsChecks.push((r) => typeof r.path === 'string' && re.test(r.path)) }
    else conds.push(sql`instr(${logs.path}, ${path}) > 0`)
  }
  if (q.remote_ip !== undefined && q.remote_ip !== '') {
    const ip = String(q.remote_ip)
    if (ip.includes('/')) {
      let net
      try { net = parseCidr(ip) } catch { throw badRequest('remote_ip: invalid CIDR') }
      if (net.prefix > (net.family === 4 ? 32 : 128) || !Number.isInteger(net.prefix)) throw badRequest('remote_ip: invalid CIDR prefix')
      jsChecks.push((r) => {
        if (typeof r.remote_ip !== 'string') return false
        try { const a = ipToBigInt(r.remote_ip); return a.family === net.family && a.value >= net.start && a.value <= endOf(net) } catch { return false }
      })
    } else conds.push(sql`instr(${logs.remoteIp}, ${ip}) > 0`)
  }
  const levels = _list(q.level).map((l) => l.toLowerCase())
  if (levels.length) conds.push(inArray(logs.level, levels))
  if (q.query !== undefined && q.query !== '') {
    const t = String(q.query)
    conds.push(sql`(instr(${logs.path}, ${t}) > 0 OR instr(${logs.userAgent}, ${t}) > 0 OR instr(${logs.message}, ${t}) > 0 OR instr(${logs.raw}, ${t}) > 0)`)
  }
  if (q.waf_rule_id !== undefined && q.waf_rule_id !== '') conds.push(inArray(logs.wafRuleId, _ints(q.waf_rule_id, 'waf_rule_id')))
  const severities = _list(q.waf_severity).map((s) => s.toUpperCase())
  if (severities.length) conds.push(inArray(logs.wafSeverity, severities))
  const from = parseTime(q.from, 'from'), to = parseTime(q.to, 'to')
  if (from !== undefined) conds.push(gte(logs.tsMs, from))
  if (to !== undefined) conds.push(lte(logs.tsMs, to))

  const predicate = jsChecks.length ? (r: Row) => jsChecks.every((c) => c(r)) : null
  // The same filter, evaluated on a presented row (live tail).
  const matches = (r: PresentedLog): boolean => {
    const x = r as any
    const ts = Date.parse(x.ts)
    const text = String(q.query ?? '')
    return (!sources.length || sources.includes(x.source))
      && (!(hostIds.length || domains.length) || hostIds.includes(x.host_id) || domains.includes(x.host_domain))
      && (!ruleIds.length || ruleIds.includes(x.rule_id))
      && (!statuses.length || statuses.some(([a, b]) => x.status >= a && x.status <= b))
      && (!methods.length || methods.includes(x.method))
      && (!q.path || String(q.path).startsWith('re:') || (typeof x.path === 'string' && x.path.includes(String(q.path))))
      && (!q.remote_ip || String(q.remote_ip).includes('/') || (typeof x.remote_ip === 'string' && x.remote_ip.includes(String(q.remote_ip))))
      && (!levels.length || levels.includes(x.level))
      && (!text || [x.path, x.user_agent, x.message, x.raw].some((f) => typeof f === 'string' && f.includes(text)))
      && (!q.waf_rule_id || _ints(q.waf_rule_id, 'waf_rule_id').includes(x.waf_rule_id))
      && (!severities.length || severities.includes(x.waf_severity))
      && (from === undefined || ts >= from) && (to === undefined || ts <= to)
      && (!predicate || predicate(x))
  }
  return { where: conds.length ? and(...conds) : undefined, predicate, matches }
}
