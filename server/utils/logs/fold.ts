import type { InStatement, Row } from '@libsql/client'
import { getClient } from '../core/db'
import type { LogRow, LogSource } from './parse'

// One row per request (docs/logs.md "One row per request"). A request the WAF blocked
// leaves three lines: the WAF's audit entry, Caddy's error line (the 403) and the access
// line. The WAF and error rows stay stored, each pointing at the access row of the same
// request (request_log_id); the access row carries the WAF's verdict; the default list
// and live tail show the access row alone.
//
// The three files are read one after another, so either side may be stored first:
// a WAF or error row looks for its access row among the stored ones, and an access row
// looks for the WAF and error rows not folded yet. Caddy writes no request id the WAF
// also knows, so "the same request" is the same node, client, host, method and URI, with
// the other row's time inside the request's time (the access line is written at its end,
// `duration` after its start; the WAF's entry carries the start, the error line a moment
// before the end). Among several candidates the nearest start wins, one row of each source
// per access row.

/** Clock slack between the lines of one request. */
const _SLACK_MS = 1_000
/** A longer request is not matched (its access line may come this long after the WAF's entry). */
export const FOLD_MAX_REQUEST_MS = 120_000

const _FOLDED_SOURCES = new Set<LogSource>(['waf_audit', 'caddy_error'])

interface _Key {
  nodeId: number | null
  hostDomain: string | null
  remoteIp: string | null
  method: string | null
  path: string | null
}
interface _Access extends _Key {
  id: number
  tsMs: number
  durationMs: number | null
}
interface _Other extends _Key {
  id: number
  tsMs: number
  source: string
  wafRuleId: number | null
  wafSeverity: string | null
  wafAnomalyScore: number | null
  wafRules: string | null
}

const _requestBound = (r: _Key) => !!(r.remoteIp && r.method && r.path)
/** Candidates are looked up by client, method and URI (a burst of blocked requests is thousands of each). */
const _lookupKey = (r: _Key) => `${r.remoteIp} ${r.method} ${r.path}`
function _byLookupKey<T extends _Key>(list: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const x of list) {
    const k = _lookupKey(x)
    const bucket = out.get(k)
    if (bucket) bucket.push(x)
    else out.set(k, [x])
  }
  return out
}
const _sameRequest = (a: _Key, b: _Key) =>
  (a.nodeId ?? null) === (b.nodeId ?? null) &&
  a.remoteIp === b.remoteIp &&
  a.method === b.method &&
  a.path === b.path &&
  (a.hostDomain === null || b.hostDomain === null || a.hostDomain === b.hostDomain)
const _startOf = (a: { tsMs: number; durationMs: number | null }) => a.tsMs - Math.min(a.durationMs ?? 0, FOLD_MAX_REQUEST_MS)
/** How far `ts` is from the request's start, or null when it lies outside the request. */
function _distance(access: { tsMs: number; durationMs: number | null }, ts: number): number | null {
  const start = _startOf(access)
  if (ts < start - _SLACK_MS || ts > access.tsMs + _SLACK_MS) return null
  return Math.abs(ts - start)
}

const _num = (v: unknown) => (v === null || v === undefined ? null : Number(v))
const _text = (v: unknown) => (v === null || v === undefined ? null : String(v))
const _key = (r: Row): _Key => ({
  nodeId: _num(r.node_id),
  hostDomain: _text(r.host_domain),
  remoteIp: _text(r.remote_ip),
  method: _text(r.method),
  path: _text(r.path),
})

/** What folding adds to a group's commit: statements after its INSERTs, and the stored rows it changed. */
export interface Fold {
  statements: InStatement[]
  /** Stored rows whose fields changed (an access row given a verdict, a WAF or error row folded). */
  changedIds: number[]
}

/**
 * Folds a parsed group before it is committed: sets fields on `rows` (a WAF or error row's
 * request_log_id, an access row's verdict) and returns the updates of stored rows. The
 * ingester is the only writer of these sources, so nothing changes between this read and
 * the commit.
 */
export async function foldGroup(source: LogSource, rows: LogRow[]): Promise<Fold> {
  if (source === 'caddy_access') return _foldAccessRows(rows)
  if (_FOLDED_SOURCES.has(source)) return _foldIntoStoredAccess(rows)
  return { statements: [], changedIds: [] }
}

// The verdict an access row carries: the most severe rule, every rule that matched, and the total score.
const _verdictOf = (r: {
  wafRuleId?: number | null
  wafSeverity?: string | null
  wafAnomalyScore?: number | null
  wafRules?: string | null
}) => ({
  wafRuleId: r.wafRuleId ?? null,
  wafSeverity: r.wafSeverity ?? null,
  wafAnomalyScore: r.wafAnomalyScore ?? null,
  wafRules: r.wafRules ?? null,
})

/** WAF or error rows whose access row is stored already: they point at it; a WAF row's verdict goes onto it. */
async function _foldIntoStoredAccess(rows: LogRow[]): Promise<Fold> {
  const bound = rows.filter((r) => _requestBound(r as _Key))
  if (!bound.length) return { statements: [], changedIds: [] }
  const byIp = new Map<string, LogRow[]>()
  for (const r of bound) byIp.set(r.remoteIp!, [...(byIp.get(r.remoteIp!) ?? []), r])
  const access: _Access[] = []
  for (const [ip, list] of byIp) {
    const min = Math.min(...list.map((r) => r.tsMs))
    const max = Math.max(...list.map((r) => r.tsMs))
    const rs = await getClient().execute({
      sql: `SELECT id, ts_ms, duration_ms, node_id, host_domain, remote_ip, method, path FROM logs
            WHERE remote_ip = ? AND ts_ms BETWEEN ? AND ? AND source = 'caddy_access'`,
      args: [ip, min - _SLACK_MS, max + FOLD_MAX_REQUEST_MS + _SLACK_MS],
    })
    for (const r of rs.rows) access.push({ ..._key(r), id: Number(r.id), tsMs: Number(r.ts_ms), durationMs: _num(r.duration_ms) })
  }
  if (!access.length) return { statements: [], changedIds: [] }
  // One WAF row and one error row per access row: those already taken are skipped.
  const taken = new Set<string>()
  const ids = access.map((a) => a.id)
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500)
    const rs = await getClient().execute({
      sql: `SELECT request_log_id, source FROM logs WHERE request_log_id IN (${chunk.map(() => '?').join(',')})`,
      args: chunk,
    })
    for (const r of rs.rows) taken.add(`${r.request_log_id}:${r.source}`)
  }
  const statements: InStatement[] = []
  const changedIds: number[] = []
  const accessByKey = _byLookupKey(access)
  for (const r of bound) {
    let best: _Access | null = null
    let bestDistance = Infinity
    for (const a of accessByKey.get(_lookupKey(r as _Key)) ?? []) {
      if (taken.has(`${a.id}:${r.source}`) || !_sameRequest(a, r as _Key)) continue
      const d = _distance(a, r.tsMs)
      if (d !== null && d < bestDistance) [best, bestDistance] = [a, d]
    }
    if (!best) continue
    taken.add(`${best.id}:${r.source}`)
    r.requestLogId = best.id
    if (r.source === 'waf_audit') {
      const v = _verdictOf(r)
      statements.push({
        sql: 'UPDATE logs SET waf_rule_id = ?, waf_severity = ?, waf_anomaly_score = ?, waf_rules = ? WHERE id = ?',
        args: [v.wafRuleId, v.wafSeverity, v.wafAnomalyScore, v.wafRules, best.id],
      })
      changedIds.push(best.id)
    }
  }
  return { statements, changedIds }
}

/** Access rows whose WAF or error rows are stored already: those rows point at them; the verdict goes onto them. */
async function _foldAccessRows(rows: LogRow[]): Promise<Fold> {
  const bound = rows.map((r, i) => ({ r, i })).filter(({ r }) => _requestBound(r as _Key))
  if (!bound.length) return { statements: [], changedIds: [] }
  const min = Math.min(...bound.map(({ r }) => _startOf({ tsMs: r.tsMs, durationMs: r.durationMs ?? null })))
  const max = Math.max(...bound.map(({ r }) => r.tsMs))
  // On logs_source_ts_idx: the WAF and error rows of the group's time span.
  const rs = await getClient().execute({
    sql: `SELECT id, ts_ms, source, node_id, host_domain, remote_ip, method, path, waf_rule_id, waf_severity, waf_anomaly_score, waf_rules FROM logs
          WHERE source IN ('waf_audit', 'caddy_error') AND request_log_id IS NULL AND ts_ms BETWEEN ? AND ?`,
    args: [min - _SLACK_MS, max + _SLACK_MS],
  })
  const others: _Other[] = rs.rows
    .map((r) => ({
      ..._key(r),
      id: Number(r.id),
      tsMs: Number(r.ts_ms),
      source: String(r.source),
      wafRuleId: _num(r.waf_rule_id),
      wafSeverity: _text(r.waf_severity),
      wafAnomalyScore: _num(r.waf_anomaly_score),
      wafRules: _text(r.waf_rules),
    }))
    .filter(_requestBound)
  if (!others.length) return { statements: [], changedIds: [] }
  const statements: InStatement[] = []
  const changedIds: number[] = []
  const used = new Set<number>()
  const othersByKey = _byLookupKey(others)
  for (const { r, i } of bound) {
    const access = { tsMs: r.tsMs, durationMs: r.durationMs ?? null }
    const candidates = othersByKey.get(_lookupKey(r as _Key)) ?? []
    for (const src of _FOLDED_SOURCES) {
      let best: _Other | null = null
      let bestDistance = Infinity
      for (const o of candidates) {
        if (o.source !== src || used.has(o.id) || !_sameRequest(o, r as _Key)) continue
        const d = _distance(access, o.tsMs)
        if (d !== null && d < bestDistance) [best, bestDistance] = [o, d]
      }
      if (!best) continue
      used.add(best.id)
      if (src === 'waf_audit') Object.assign(r, _verdictOf(best))
      // The access row's id is known only once inserted. The group's INSERTs and these UPDATEs run in one
      // write transaction, in which the ids (AUTOINCREMENT) are consecutive: the row at index i of n is
      // max(id) - (n - 1 - i) right after the INSERTs.
      statements.push({
        sql: 'UPDATE logs SET request_log_id = (SELECT max(id) FROM logs) - ? WHERE id = ? AND request_log_id IS NULL',
        args: [rows.length - 1 - i, best.id],
      })
      changedIds.push(best.id)
    }
  }
  return { statements, changedIds }
}
