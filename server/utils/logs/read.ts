import { and, desc, lt, sql, type SQL } from 'drizzle-orm'
import { SQLiteAsyncDialect } from 'drizzle-orm/sqlite-core'
import type { Row } from '@libsql/client'
import { logs } from '../../../db/schema'
import { getClient, getDb } from '../core/db'
import type { CompiledFilter } from './filters'
import { indexMatchOf, type IndexMatch } from './index-match'
import { presentLog, recordOf, type LogRecord } from './present'
import { logMarks } from './rollup'

// Reading the logs table newest first. Lists are ORDER BY id DESC LIMIT n: for
// a filter most rows match (one host, one source), an index on that column
// plus a sort reads far more than walking the newest ids and stopping, and for
// a rare value the index is better. So the newest ids are walked first in
// windows (rowid only: NOT INDEXED), and the index takes over below them.

/** Rows a JS-evaluated filter (regex, CIDR) may examine per request, and for how long. */
export const SCAN_LIMIT_ROWS = 200_000
export const SCAN_BUDGET_MS = 2_000
/** Ids walked before handing over to the indexes. */
export const PROBE_IDS = 20_000

const _dialect = new SQLiteAsyncDialect()
const _c = (name: string) => sql`${sql.identifier(name)}`

const _run: RunQuery = async (q) => {
  const { sql: text, params } = _dialect.sqlToQuery(q)
  return (await getClient().execute({ sql: text, args: params as Array<string | number | null> })).rows
}
const _select = async (q: SQL): Promise<LogRecord[]> => (await _run(q)).map(recordOf)

async function _maxId(): Promise<number> {
  const r = await getClient().execute('SELECT coalesce(max(id), 0) AS m FROM logs')
  return Number(r.rows[0]!.m)
}

/** The rows of `where` with ids in [low, high), newest first, at most `limit`: rowid order, no index. */
export function selectIdWindow(where: SQL | undefined, low: number, high: number, limit: number): Promise<LogRecord[]> {
  return _select(
    sql`SELECT * FROM logs NOT INDEXED WHERE ${and(where, sql`${_c('id')} >= ${low}`, sql`${_c('id')} < ${high}`)} ORDER BY id DESC LIMIT ${limit}`,
  )
}

/**
 * As selectIdWindow, for ids at or below the index's mark: the index lists the
 * candidates (rowid bounds as literals: FTS5 ignores a REAL one) and each is
 * read by rowid.
 */
export function selectIndexedWindow(
  index: IndexMatch,
  where: SQL | undefined,
  low: number,
  high: number,
  limit: number,
): Promise<LogRecord[]> {
  const table = sql.raw(index.table)
  return _select(
    sql`SELECT logs.* FROM (SELECT rowid AS candidate_id FROM ${table} WHERE ${table} MATCH ${index.match} AND rowid >= ${sql.raw(String(low))} AND rowid < ${sql.raw(String(high))}) CROSS JOIN logs ON logs.id = candidate_id WHERE ${where ?? sql`1`} ORDER BY logs.id DESC LIMIT ${limit}`,
  )
}

/** The newest `limit` rows matching `where` below `beforeId`. */
export async function selectNewest(where: SQL | undefined, limit: number, beforeId?: number): Promise<LogRecord[]> {
  const top = beforeId ?? (await _maxId()) + 1
  const low = Math.max(0, top - PROBE_IDS)
  const probe = await selectIdWindow(where, low, top, limit)
  if (probe.length >= limit || low === 0) return probe
  const rest = await getDb()
    .select()
    .from(logs)
    .where(and(where, lt(logs.id, low)))
    .orderBy(desc(logs.id))
    .limit(limit - probe.length)
  return [...probe, ...rest]
}

export interface Scan {
  rows: AsyncGenerator<LogRecord>
  limited(): boolean
}

/**
 * Rows matching the SQL part and then the JS predicate, newest first, walking
 * ids in growing windows. Stops after SCAN_LIMIT_ROWS rows from SQL or
 * SCAN_BUDGET_MS: `limited()` then says so. When a trigram index narrows the
 * filter (a regex's required path literal, free text), the windows at or
 * below its mark read the index's candidates instead of every id.
 */
export function scanLogs(f: CompiledFilter, beforeId?: number): Scan {
  let limited = false
  async function* rows(): AsyncGenerator<LogRecord> {
    const marks = await logMarks()
    const index = await indexMatchOf(f, _run, marks)
    let high = beforeId ?? marks.maxId + 1
    let window = 5_000
    let examined = 0
    const deadline = Date.now() + SCAN_BUDGET_MS
    while (high > 1) {
      let low = Math.max(0, high - window)
      const indexed = index !== null && high - 1 <= index.mark
      if (index && !indexed && low <= index.mark) low = index.mark + 1 // the ids above the mark first, then the index
      const page = indexed
        ? await selectIndexedWindow(index, f.where, low, high, SCAN_LIMIT_ROWS)
        : await selectIdWindow(f.where, low, high, SCAN_LIMIT_ROWS)
      for (const r of page) if (!f.predicate || f.predicate(presentLog(r))) yield r
      examined += page.length
      high = low
      window = Math.min(window * 2, 200_000)
      if (high > 1 && (examined >= SCAN_LIMIT_ROWS || Date.now() > deadline)) {
        limited = true
        return
      }
    }
  }
  return { rows: rows(), limited: () => limited }
}

export type RunQuery = (q: SQL) => Promise<Row[]>

/** Runs `fn` in one read transaction: every statement sees the same snapshot (WAL readers do not block writers). */
export async function withSnapshot<T>(fn: (run: RunQuery) => Promise<T>): Promise<T> {
  const tx = await getClient().transaction('read')
  try {
    return await fn(async (q) => {
      const { sql: text, params } = _dialect.sqlToQuery(q)
      return (await tx.execute({ sql: text, args: params as Array<string | number | null> })).rows
    })
  } finally {
    tx.close()
  }
}
