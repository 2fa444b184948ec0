import { and, asc, eq, isNull } from 'drizzle-orm'
import { logs } from '../../../db/schema'
import { getDb } from '../core/db'
import { badRequest, notFound } from '../core/errors'
import { compileLogFilter, type CompiledFilter } from './filters'
import { presentLog } from './present'
import { scanLogs, selectNewest } from './read'
import { computeLogStats, computeLogTimeseries } from './stats'

// The log queries behind /api/logs, /api/logs/{id}, /stats and /timeseries.

function _limit(v: unknown): number {
  if (v === undefined || v === '') return 100
  const n = Number(v)
  if (!/^\d+$/.test(String(v)) || !Number.isInteger(n) || n < 1 || n > 1000) throw badRequest('limit: must be an integer from 1 to 1000')
  return n
}

/**
 * One row per request (fold.ts): without a source filter, the rows folded into an access row
 * are left out (the access row carries their verdict; its detail lists them). A source filter
 * lists what it names, folded or not, so source=waf_audit still gives every WAF row.
 */
export function listFilter(f: CompiledFilter): CompiledFilter {
  if (f.dims.has('source')) return f
  return { ...f, where: and(f.where, isNull(logs.requestLogId)) }
}

/** GET /api/logs: newest first, `limit` (default 100, max 1000) rows below `before_id`. */
export async function listLogs(q: Record<string, unknown>): Promise<{ rows: ReturnType<typeof presentLog>[]; scanLimited: boolean }> {
  const f = compileLogFilter(q)
  const limit = _limit(q.limit)
  let beforeId: number | undefined
  if (q.before_id !== undefined && q.before_id !== '') {
    if (!/^[1-9]\d{0,15}$/.test(String(q.before_id))) throw badRequest('before_id: must be a positive integer')
    beforeId = Number(q.before_id)
  }
  const listed = listFilter(f)
  if (!listed.predicate) {
    return { rows: (await selectNewest(listed.where, limit, beforeId)).map(presentLog), scanLimited: false }
  }
  const scan = scanLogs(listed, beforeId)
  const out = []
  for await (const r of scan.rows) {
    out.push(presentLog(r))
    if (out.length >= limit) break
  }
  return { rows: out, scanLimited: out.length < limit && scan.limited() }
}

/**
 * One row; an access row also lists the WAF and error rows folded into it (`folded`, oldest
 * first), and a folded row names its access row (`request_log_id`).
 */
export async function getLog(id: number) {
  const row = await getDb().select().from(logs).where(eq(logs.id, id)).get()
  if (!row) throw notFound('log row', id)
  if (row.source !== 'caddy_access') return presentLog(row)
  const folded = await getDb().select().from(logs).where(eq(logs.requestLogId, id)).orderBy(asc(logs.id))
  return { ...presentLog(row), folded: folded.map(presentLog) }
}

/** Stats for a filter (see stats.ts). */
export async function logStats(q: Record<string, unknown>) {
  return (await computeLogStats(q)).stats
}

/** Timeseries for a filter (see stats.ts). */
export async function logTimeseries(q: Record<string, unknown>) {
  return (await computeLogTimeseries(q)).points
}
