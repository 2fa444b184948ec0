import type { InStatement } from '@libsql/client'
import { getClient, runWrite } from '../core/db'

// Hourly roll-ups of the logs table (migration 0009), so that stats and
// hourly/daily timeseries over millions of rows read a few thousand. The
// roll-up runs in the background over rows with id > last_id (ids only grow:
// AUTOINCREMENT), so every writer's rows are counted (ingested, audit, or
// inserted by hand) without slowing ingestion down. Queries read the roll-ups
// for whole hours and add the raw rows above last_id: exact at any moment.
// Retention subtracts what it deletes. All arithmetic is done in SQL, with
// JS twins (bucketUsOf, pathKeyOf) for rows filtered in JS.

export const HOUR_MS = 3_600_000
/** Rows rolled up per write transaction. */
export const ROLLUP_CHUNK_ROWS = 20_000

export const HOUR_SQL = `(ts_ms / ${HOUR_MS}) * ${HOUR_MS}`
/** A duration in integer microseconds. */
export const DURATION_US_SQL = 'CAST(round(duration_ms * 1000) AS INTEGER)'
/** The duration histogram bucket: microseconds rounded up to 3 significant digits. */
export const BUCKET_SQL = (() => {
  const u = DURATION_US_SQL
  let text = `CASE WHEN ${u} < 1000 THEN ${u}`
  for (let p = 10, limit = 10_000; p <= 1e10; p *= 10, limit *= 10) text += ` WHEN ${u} < ${limit} THEN ((${u} + ${p - 1}) / ${p}) * ${p}`
  return `${text} ELSE ${u} END`
})()
/** The path without its query string. */
export const PATH_KEY_SQL = "CASE WHEN instr(path, '?') > 0 THEN substr(path, 1, instr(path, '?') - 1) ELSE path END"

/** JS twin of BUCKET_SQL, for a duration in ms. */
export function bucketUsOf(durationMs: number): number {
  const u = Math.round(durationMs * 1000)
  if (u < 1000) return u
  for (let p = 10, limit = 10_000; p <= 1e10; p *= 10, limit *= 10) if (u < limit) return Math.floor((u + p - 1) / p) * p
  return u
}
/** The query string without its '?' (rows whose path has one). */
export const QUERY_PART_SQL = "substr(path, instr(path, '?') + 1)"

/** JS twin of PATH_KEY_SQL. */
export const pathKeyOf = (path: string) => {
  const i = path.indexOf('?')
  return i < 0 ? path : path.slice(0, i)
}

/** A blocked request: refused at the proxy (403 bouncer/LAN gate/WAF, 429 rate limit) or a WAF audit row that blocked. */
export const BLOCKED_SQL = "((source = 'caddy_access' AND status IN (403, 429)) OR (source = 'waf_audit' AND status >= 400))"
export const ROLLUP_TABLES = [
  'logs_hourly',
  'logs_hourly_durations',
  'logs_hourly_host_paths',
  'logs_hourly_paths',
  'logs_hourly_blocked',
  'logs_hourly_status_durations',
  'logs_hourly_status_paths',
  'logs_hourly_paths_by_status',
  'logs_hourly_path_durations',
  'logs_hourly_queries',
] as const
/** The trigram index of paths (migration 0022): covers the same rows as the roll-ups. */
export const PATH_INDEX = 'logs_path_fts'
/** The trigram index of each row's searchable text (migration 0029): covers the rows at or below its own mark, text_last_id. */
export const TEXT_INDEX = 'logs_text_fts'
/**
 * The text the free-text filter searches (filters.ts: path, user agent,
 * message, raw), one line each: every substring of any of them is a substring
 * of this, so the index's candidates are a superset; the filter confirms.
 */
export const TEXT_BODY_SQL =
  "coalesce(path, '') || char(10) || coalesce(user_agent, '') || char(10) || coalesce(message, '') || char(10) || coalesce(raw, '')"
/** Rows indexed per write transaction: indexing a row costs about as much as rolling up several. */
export const TEXT_INDEX_CHUNK_ROWS = 5_000

const _DIMS = "source, coalesce(host_id, 0), coalesce(host_domain, '')"
const _STATUS_DIMS = `${_DIMS}, coalesce(status, 0), coalesce(method, ''), coalesce(level, '')`

/**
 * The upserts that add (sign +1) or subtract (-1) the rows matching `where` (SQL over logs, with `?` args), and the path index's insert or delete.
 * `where` picks rows by id (a range, or a batch): every statement reads logs NOT INDEXED, so rowid lookups
 * do it; otherwise the planner answered the blocked-requests roll-up's OR of sources with a walk of the
 * whole source index (all access rows) for every chunk and every retention batch.
 */
export function rollupStatements(where: string, args: Array<string | number>, sign: 1 | -1): InStatement[] {
  const s = sign < 0 ? '-' : ''
  return [
    {
      sql: `INSERT INTO logs_hourly (hour_ms, source, host_id, host_domain, status, method, level, n, dur_n, dur_sum_us)
      SELECT ${HOUR_SQL}, ${_DIMS}, coalesce(status, 0), coalesce(method, ''), coalesce(level, ''), ${s}count(*), ${s}count(duration_ms), ${s}coalesce(sum(${DURATION_US_SQL}), 0)
      FROM logs NOT INDEXED WHERE ${where} GROUP BY 1, 2, 3, 4, 5, 6, 7
      ON CONFLICT DO UPDATE SET n = n + excluded.n, dur_n = dur_n + excluded.dur_n, dur_sum_us = dur_sum_us + excluded.dur_sum_us`,
      args,
    },
    {
      sql: `INSERT INTO logs_hourly_durations (hour_ms, source, host_id, host_domain, bucket_us, n)
      SELECT ${HOUR_SQL}, ${_DIMS}, ${BUCKET_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND duration_ms IS NOT NULL GROUP BY 1, 2, 3, 4, 5
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    {
      sql: `INSERT INTO logs_hourly_host_paths (hour_ms, source, host_id, host_domain, path, n)
      SELECT ${HOUR_SQL}, ${_DIMS}, ${PATH_KEY_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL GROUP BY 1, 2, 3, 4, 5
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    {
      sql: `INSERT INTO logs_hourly_paths (hour_ms, source, path, n)
      SELECT ${HOUR_SQL}, source, ${PATH_KEY_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL GROUP BY 1, 2, 3
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    // Blocked requests by address and country, for the security dashboard (migration 0011).
    {
      sql: `INSERT INTO logs_hourly_blocked (hour_ms, source, host_id, status, remote_ip, country, n)
      SELECT ${HOUR_SQL}, source, coalesce(host_id, 0), coalesce(status, 0), coalesce(remote_ip, ''), coalesce(country, ''), ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND ${BLOCKED_SQL} GROUP BY 1, 2, 3, 4, 5, 6
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    // p95 and top paths under a status, method or level filter (migration 0022).
    {
      sql: `INSERT INTO logs_hourly_status_durations (hour_ms, source, host_id, host_domain, status, method, level, bucket_us, n)
      SELECT ${HOUR_SQL}, ${_STATUS_DIMS}, ${BUCKET_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND duration_ms IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    {
      sql: `INSERT INTO logs_hourly_status_paths (hour_ms, source, host_id, host_domain, status, method, level, path, n)
      SELECT ${HOUR_SQL}, ${_STATUS_DIMS}, ${PATH_KEY_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    // Top paths under a status, method or level filter without a host filter (migration 0028).
    {
      sql: `INSERT INTO logs_hourly_paths_by_status (hour_ms, source, status, method, level, path, n)
      SELECT ${HOUR_SQL}, source, coalesce(status, 0), coalesce(method, ''), coalesce(level, ''), ${PATH_KEY_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    // Durations per path and the query strings seen, for stats of an unselective path substring (migration 0030).
    {
      sql: `INSERT INTO logs_hourly_path_durations (hour_ms, source, path, bucket_us, n, dur_sum_us)
      SELECT ${HOUR_SQL}, source, ${PATH_KEY_SQL}, ${BUCKET_SQL}, ${s}count(*), ${s}sum(${DURATION_US_SQL})
      FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL AND duration_ms IS NOT NULL GROUP BY 1, 2, 3, 4
      ON CONFLICT DO UPDATE SET n = n + excluded.n, dur_sum_us = dur_sum_us + excluded.dur_sum_us`,
      args,
    },
    {
      sql: `INSERT INTO logs_hourly_queries (hour_ms, source, query, n)
      SELECT ${HOUR_SQL}, source, ${QUERY_PART_SQL}, ${s}count(*)
      FROM logs NOT INDEXED WHERE (${where}) AND instr(path, '?') > 0 GROUP BY 1, 2, 3
      ON CONFLICT DO UPDATE SET n = n + excluded.n`,
      args,
    },
    sign > 0
      ? { sql: `INSERT INTO ${PATH_INDEX} (rowid, path) SELECT id, path FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL`, args }
      : { sql: `DELETE FROM ${PATH_INDEX} WHERE rowid IN (SELECT id FROM logs NOT INDEXED WHERE (${where}) AND path IS NOT NULL)`, args },
  ]
}

/** Removes roll-up rows that reached zero in the hours of the rows matching `where`. */
export function rollupCleanupStatements(where: string, args: Array<string | number>): InStatement[] {
  const hours = `hour_ms IN (SELECT DISTINCT ${HOUR_SQL} FROM logs NOT INDEXED WHERE ${where})`
  return ROLLUP_TABLES.map((t) => ({ sql: `DELETE FROM ${t} WHERE ${hours} AND n <= 0`, args }))
}

type _MarkColumn = 'last_id' | 'text_last_id'

/** Both marks of logs_rollup_state (ids at or below them are covered) and the newest id, in one read. */
export async function logMarks(): Promise<{ lastId: number; textLastId: number; maxId: number }> {
  const r = await getClient().execute(
    'SELECT last_id, text_last_id, (SELECT coalesce(max(id), 0) FROM logs) AS max_id FROM logs_rollup_state WHERE id = 1',
  )
  const row = r.rows[0]
  return { lastId: Number(row?.last_id ?? 0), textLastId: Number(row?.text_last_id ?? 0), maxId: Number(row?.max_id ?? 0) }
}

/**
 * Moves a mark over the next rows above it, at most `chunk` ids per write
 * transaction (the statements for ids in (from, to], then the mark), until it
 * has caught up or `budgetMs` is spent. Returns the rows' id span covered.
 */
async function _advanceMark(
  column: _MarkColumn,
  statementsFor: (from: number, to: number) => InStatement[],
  chunk: number,
  budgetMs: number,
): Promise<number> {
  const deadline = Date.now() + budgetMs
  let covered = 0
  for (;;) {
    const step = await runWrite(async () => {
      const marks = await logMarks()
      const mark = column === 'last_id' ? marks.lastId : marks.textLastId
      const maxId = marks.maxId
      if (maxId <= mark) return 0
      const to = Math.min(maxId, mark + chunk)
      await getClient().batch(
        [...statementsFor(mark, to), { sql: `UPDATE logs_rollup_state SET ${column} = ? WHERE id = 1`, args: [to] }],
        'write',
      )
      return to - mark
    })
    covered += step
    if (step < chunk || Date.now() > deadline) return covered
    await new Promise((r) => setImmediate(r)) // let requests and ingestion in between chunks
  }
}

/** Rolls up the next rows above the roll-up mark (see _advanceMark). */
export async function rollUpLogs(opts: { chunkRows?: number; budgetMs?: number } = {}): Promise<number> {
  return _advanceMark(
    'last_id',
    (from, to) => rollupStatements('id > ? AND id <= ?', [from, to], 1),
    opts.chunkRows ?? ROLLUP_CHUNK_ROWS,
    opts.budgetMs ?? 1_000,
  )
}

/** Adds the next rows above the text index's mark to it (see _advanceMark). */
export async function indexLogText(opts: { chunkRows?: number; budgetMs?: number } = {}): Promise<number> {
  return _advanceMark(
    'text_last_id',
    (from, to) => [
      {
        sql: `INSERT INTO ${TEXT_INDEX} (rowid, body) SELECT id, ${TEXT_BODY_SQL} FROM logs NOT INDEXED WHERE id > ? AND id <= ?`,
        args: [from, to],
      },
    ],
    opts.chunkRows ?? TEXT_INDEX_CHUNK_ROWS,
    opts.budgetMs ?? 1_000,
  )
}

/** Empties the text index (the setting logs.text_index turned off): queries then read the rows. */
export async function clearTextIndex(): Promise<void> {
  await runWrite(() =>
    getClient().batch(
      [`INSERT INTO ${TEXT_INDEX} (${TEXT_INDEX}) VALUES ('delete-all')`, 'UPDATE logs_rollup_state SET text_last_id = 0 WHERE id = 1'],
      'write',
    ),
  )
}

/** The text index's delete for the rows matching `where` that it holds (retention). */
export function textIndexDeleteStatement(where: string, args: Array<string | number>): InStatement {
  return {
    sql: `DELETE FROM ${TEXT_INDEX} WHERE rowid IN (SELECT id FROM logs NOT INDEXED WHERE (${where}) AND id <= (SELECT text_last_id FROM logs_rollup_state WHERE id = 1))`,
    args,
  }
}

/** Rebuilds every roll-up from the logs table (repair tool; the roll-up is otherwise incremental). */
export async function rebuildRollups(): Promise<void> {
  await runWrite(() =>
    getClient().batch(
      [
        ...ROLLUP_TABLES.map((t) => `DELETE FROM ${t}`),
        `DELETE FROM ${PATH_INDEX}`,
        'UPDATE logs_rollup_state SET last_id = 0 WHERE id = 1',
      ],
      'write',
    ),
  )
  while ((await rollUpLogs({ budgetMs: 60_000 })) > 0) {
    /* until caught up */
  }
}
