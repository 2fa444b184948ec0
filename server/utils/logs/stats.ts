import { and, sql, type SQL } from 'drizzle-orm'
import { badRequest } from '../core/errors'
import { compileLogFilter, type CompiledFilter, type Dim } from './filters'
import { indexMatchOf, type IndexMatch } from './index-match'
import { scanLogs, withSnapshot, type RunQuery } from './read'
import { BUCKET_SQL, DURATION_US_SQL, HOUR_MS, PATH_KEY_SQL, bucketUsOf, pathKeyOf } from './rollup'
import type { LogRecord } from './present'

// Stats and timeseries. When the filter only uses dimensions a roll-up table
// has, whole hours are read from the roll-up and the rest from raw rows: the
// partial hours at either end of from/to, and the rows not rolled up yet (id
// above the mark). All parts are summed in one SQL statement each, inside one
// read snapshot. Status, method and level have roll-ups of their own for p95
// and top paths (migration 0022), and a path substring matching many rows is
// summed from the roll-ups keyed by path when no query string can hold it
// (migration 0030, planLogRead). Otherwise everything is computed from raw
// rows, in one pass over the matching rows; a path substring or a free-text
// filter finds its rows through a trigram index (ids at or below the index's
// mark) plus the rows above the mark, never by scanning the table.
//
// p95: nearest rank (index floor(0.95 × (n − 1)) of the sorted durations),
// reported rounded up to 3 significant digits (the histogram's resolution),
// the same way on every path. avg: to the microsecond.

const _HOURLY = new Set<Dim>(['source', 'host', 'status', 'method', 'level'])
const _DURATIONS = new Set<Dim>(['source', 'host'])
const _HOST_PATHS = new Set<Dim>(['source', 'host'])
const _PATHS = new Set<Dim>(['source'])
const _PATHS_BY_STATUS = new Set<Dim>(['source', 'status', 'method', 'level'])
const _BY_PATH = new Set<Dim>(['source', 'path'])
const _BY_TEXT = new Set<Dim>(['source', 'query'])
const _within = (f: CompiledFilter, allowed: Set<Dim>) => [...f.dims].every((d) => allowed.has(d))
const _c = (name: string) => sql`${sql.identifier(name)}`

export const BUCKETS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const
const _CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const

export interface LogStats {
  total: number
  by_status_class: Record<string, number>
  by_source: Record<string, number>
  avg_duration_ms: number | null
  p95_duration_ms: number | null
  top_hosts: Array<{ host_domain: string; count: number }>
  top_paths: Array<{ path: string; count: number }>
}

/**
 * A roll-up part (SELECT from a roll-up table with the given WHERE) and a raw
 * part (SELECT from `from` with the given WHERE), whose counts are multiplied
 * by `sign`: 1 for rows added, -1 for rows of a whole hour read from the
 * roll-up that lie outside from..to.
 */
export interface Parts {
  rollup: (where: SQL) => SQL
  raw: (from: SQL, where: SQL, sign: SQL) => SQL
}

/** What a roll-up query needs to know of the table, read inside the caller's snapshot. */
export interface RollupState {
  /** Ids at or below it are in the roll-up tables. */
  lastId: number
  /** Ids at or below it are in the free-text index (0: it holds nothing). */
  textLastId: number
  /** The oldest and newest row's time: they bound how many raw rows an hour's slice can hold. */
  minTs: number
  maxTs: number
}

interface RawPiece {
  from: SQL
  where: SQL
  sign: 1 | -1
}
/** Roll-up hours (null: none) and raw pieces whose signed sum is exactly the filter's rows. */
interface HourlyReadPlan {
  rollupWhere: SQL | null
  raw: RawPiece[]
}

/**
 * The raw rows of the filter as FROM / WHERE pairs whose union is exact. With
 * an index query the index gives the candidate ids at or below its mark and
 * the rows above the mark are read by rowid; otherwise one plain part.
 */
export function rawParts(f: CompiledFilter, index: IndexMatch | null): Array<[SQL, SQL]> {
  const where = f.where ?? sql`1`
  if (index === null) return [[sql`logs`, where]]
  // CROSS JOIN keeps the index first: each candidate is one rowid lookup (the planner would otherwise walk a ts_ms index).
  const table = sql.raw(index.table)
  const candidates = sql`(SELECT rowid AS candidate_id FROM ${table} WHERE ${table} MATCH ${index.match}) CROSS JOIN logs ON logs.id = candidate_id`
  return [
    [candidates, and(sql`logs.id <= ${index.mark}`, where)!],
    [sql`logs NOT INDEXED`, and(sql`id > ${index.mark}`, where)!],
  ]
}

/** Of two slices of an hour (ms spans), the rows it can hold: the part inside the table's oldest..newest row. */
const _spanWithin = (state: RollupState, from: number, toExclusive: number) =>
  Math.max(0, Math.min(toExclusive, state.maxTs + 1) - Math.max(from, state.minTs))

/**
 * Where a query over hours reads its rows. Whole hours inside from..to come
 * from the roll-up; rows above the mark are read raw. A partial hour at
 * either end is read raw, or, when the slice outside from..to is the smaller
 * one, read whole from the roll-up less that slice's rolled-up rows: the
 * default window (the last 24 h, no `to`) then reads at most half an hour of
 * raw rows instead of up to a whole one. The slices are compared by time
 * within the table's span (rows after the newest row do not exist).
 * `useRollup` false (or no whole hour in from..to): the raw parts only.
 */
export function planHourlyRead(f: CompiledFilter, state: RollupState, useRollup: boolean, index: IndexMatch | null = null): HourlyReadPlan {
  const { lastId } = state
  const from = f.fromMs,
    to = f.toMs
  const start = from === undefined ? undefined : Math.ceil(from / HOUR_MS) * HOUR_MS
  const end = to === undefined ? undefined : Math.floor((to + 1) / HOUR_MS) * HOUR_MS
  if (!useRollup || (start !== undefined && end !== undefined && start >= end))
    return { rollupWhere: null, raw: rawParts(f, index).map(([table, where]) => ({ from: table, where, sign: 1 })) }
  const ts = _c('ts_ms')
  const raw: RawPiece[] = []
  let lo = start,
    hi = end
  if (from !== undefined && from < start!) {
    const hourStart = start! - HOUR_MS
    if (_spanWithin(state, hourStart, from) < _spanWithin(state, from, start!)) {
      lo = hourStart
      raw.push({
        from: sql`logs`,
        where: and(f.dimWhere, sql`id <= ${lastId}`, sql`${ts} >= ${hourStart}`, sql`${ts} < ${from}`)!,
        sign: -1,
      })
    } else
      raw.push({
        from: sql`logs`,
        where: and(f.dimWhere, sql`${ts} >= ${from}`, sql`${ts} < ${start}`, to !== undefined ? sql`${ts} <= ${to}` : undefined)!,
        sign: 1,
      })
  }
  if (to !== undefined && end! <= to) {
    const hourEnd = end! + HOUR_MS
    if (_spanWithin(state, to + 1, hourEnd) < _spanWithin(state, end!, to + 1)) {
      hi = hourEnd
      raw.push({ from: sql`logs`, where: and(f.dimWhere, sql`id <= ${lastId}`, sql`${ts} > ${to}`, sql`${ts} < ${hourEnd}`)!, sign: -1 })
    } else
      raw.push({
        from: sql`logs`,
        where: and(f.dimWhere, sql`${ts} >= ${end}`, sql`${ts} <= ${to}`, from !== undefined ? sql`${ts} >= ${from}` : undefined)!,
        sign: 1,
      })
  }
  // Rows not rolled up yet, inside the hours read from the roll-up and inside from..to: by rowid
  // (NOT INDEXED keeps rowid lookups only; +ts_ms is not an index term).
  raw.push({
    from: sql`logs NOT INDEXED`,
    where: and(
      sql`id > ${lastId}`,
      f.dimWhere,
      lo !== undefined ? sql`+${ts} >= ${Math.max(lo, from!)}` : undefined,
      hi !== undefined ? sql`+${ts} < ${Math.min(hi, to! + 1)}` : undefined,
    )!,
    sign: 1,
  })
  const rollupWhere =
    and(f.dimWhere, lo !== undefined ? sql`hour_ms >= ${lo}` : undefined, hi !== undefined ? sql`hour_ms < ${hi}` : undefined) ?? sql`1`
  return { rollupWhere, raw }
}

const _SIGN = { 1: sql.raw('1'), [-1]: sql.raw('-1') } as const

/** The union of parts whose signed sum covers exactly the rows of the filter (see planHourlyRead). */
export function rollupUnion(f: CompiledFilter, state: RollupState, useRollup: boolean, parts: Parts, index: IndexMatch | null = null): SQL {
  return unionOfPlan(planHourlyRead(f, state, useRollup, index), parts)
}

/** The union of a plan's parts: its roll-up hours (if any) and its signed raw pieces. */
function unionOfPlan(plan: HourlyReadPlan, parts: Parts): SQL {
  const pieces = plan.raw.map((p) => parts.raw(p.from, p.where, _SIGN[p.sign]))
  if (plan.rollupWhere) pieces.unshift(parts.rollup(plan.rollupWhere))
  return sql.join(pieces, sql` UNION ALL `)
}

/** The roll-up mark and the table's time span, read inside the caller's snapshot. */
export async function readRollupState(run: RunQuery): Promise<RollupState> {
  const rows = await run(
    sql`SELECT last_id, text_last_id, (SELECT min(ts_ms) FROM logs) AS min_ts, (SELECT max(ts_ms) FROM logs) AS max_ts FROM logs_rollup_state WHERE id = 1`,
  )
  const r = rows[0]
  return {
    lastId: Number(r?.last_id ?? 0),
    textLastId: Number(r?.text_last_id ?? 0),
    minTs: Number(r?.min_ts ?? 0),
    maxTs: Number(r?.max_ts ?? -1),
  }
}

/**
 * When a plain path substring is summed from the roll-ups keyed by path (migration 0030) instead of
 * its rows read through the path index. The roll-ups cost what the window's path keys carry (hosts,
 * duration buckets, statuses: about 80 rows per key and hour on bench/logs-scale's traffic, at about
 * 0.1 µs each), the rows about 2 µs each: the roll-ups are read when the index lists at least
 * PATH_ROLLUP_MIN_CANDIDATES rows and at least CANDIDATES_PER_KEY_HOUR per path key and hour in the
 * window. Few distinct paths and much traffic (an API) take the roll-ups; a path per request (ids in
 * paths), or a selective substring, reads the rows, which is exact too and then faster.
 */
export const PATH_ROLLUP_MIN_CANDIDATES = 20_000
export const CANDIDATES_PER_KEY_HOUR = 4
/** Candidates counted at most: enough to tell any window's choice, without reading a whole index. */
const _CANDIDATES_COUNTED = 4_000_000

/**
 * Whether a path substring's figures can be summed from the roll-ups keyed by path: the filter is
 * the substring (sources aside), and the substring has no '?', so a row holds it exactly when its
 * path key does or its query string does; no query string rolled up in the window's hours may hold
 * it. `minCandidates` 0: whenever that holds (tests); otherwise see PATH_ROLLUP_MIN_CANDIDATES.
 */
async function _pathRollupApplies(
  f: CompiledFilter,
  run: RunQuery,
  state: RollupState,
  index: IndexMatch | null,
  minCandidates: number,
): Promise<boolean> {
  const literal = f.pathLiteral
  if (literal === undefined || literal.includes('?') || f.predicate || !_within(f, _BY_PATH) || state.lastId === 0) return false
  const lo = f.fromMs === undefined ? undefined : Math.floor(f.fromMs / HOUR_MS) * HOUR_MS
  const hours = and(lo !== undefined ? sql`hour_ms >= ${lo}` : undefined, f.toMs !== undefined ? sql`hour_ms <= ${f.toMs}` : undefined)
  const countUpTo = async (from: SQL, where: SQL | undefined, limit: number) =>
    Number(
      (await run(sql`SELECT count(*) AS n FROM (SELECT 1 FROM ${from} WHERE ${where ?? sql`1`} LIMIT ${sql.raw(String(limit))})`))[0]?.n ??
        0,
    )
  // Without an index query (a substring shorter than a trigram) the rows would be read whole: the roll-ups never cost more.
  if (index !== null && minCandidates > 0) {
    const table = sql.raw(index.table)
    const candidates = await countUpTo(table, sql`${table} MATCH ${index.match}`, _CANDIDATES_COUNTED)
    if (candidates < minCandidates) return false
    const keyHoursAtMost = Math.floor(candidates / CANDIDATES_PER_KEY_HOUR)
    if ((await countUpTo(sql`logs_hourly_paths`, hours, keyHoursAtMost + 1)) > keyHoursAtMost) return false
  }
  return (await countUpTo(sql`logs_hourly_queries`, and(hours, sql`instr(query, ${literal}) > 0`), 1)) === 0
}

/** How a query reads its rows: the plan, and whether its roll-up hours come from the roll-ups keyed by path. */
interface StatsRead {
  plan: HourlyReadPlan
  byPath: boolean
}

/** Options of the stats and the timeseries (tests move the planner's threshold). */
export interface LogStatsOptions {
  pathRollupMinCandidates?: number
}

/**
 * The read of a stats or timeseries query `q` (compiled: `f`; `hourly` false: per-minute buckets, no roll-up).
 * A free-text filter (sources aside) matching many rows is split in two disjoint parts: the rows whose
 * path holds the text, summed from the roll-ups keyed by path as a path substring would be, and the rows
 * whose path does not (the text stands in the user agent, message or raw line only), read through the
 * free-text index; the second part is usually small, and reading the index's candidates to find it
 * costs far less than grouping them all.
 */
export async function planLogRead(
  q: Record<string, unknown>,
  f: CompiledFilter,
  run: RunQuery,
  state: RollupState,
  hourly: boolean,
  opts: LogStatsOptions,
): Promise<StatsRead> {
  if (hourly && _within(f, _HOURLY)) return { plan: planHourlyRead(f, state, true), byPath: false }
  const minCandidates = opts.pathRollupMinCandidates ?? PATH_ROLLUP_MIN_CANDIDATES
  const index = await indexMatchOf(f, run, state)
  if (hourly && (await _pathRollupApplies(f, run, state, index, minCandidates)))
    return { plan: planHourlyRead(f, state, true), byPath: true }
  const text = f.queryText
  // (A text starting with 're:' would read as a path regex: such a text is read from the rows.)
  if (hourly && text !== undefined && !text.startsWith('re:') && _within(f, _BY_TEXT)) {
    const inPath = compileLogFilter({ ...q, query: undefined, path: text })
    if (await _pathRollupApplies(inPath, run, state, await indexMatchOf(inPath, run, state), minCandidates)) {
      const plan = planHourlyRead(inPath, state, true)
      // The path test first: it drops most candidates before the longer texts are searched.
      const notInPath = { ...f, where: and(sql`(path IS NULL OR instr(path, ${text}) = 0)`, f.where) }
      for (const [from, where] of rawParts(notInPath, index)) plan.raw.push({ from, where, sign: 1 })
      return { plan, byPath: true }
    }
  }
  return { plan: planHourlyRead(f, state, false, index), byPath: false }
}

const _DUR_US = sql.raw(DURATION_US_SQL),
  _BUCKET = sql.raw(BUCKET_SQL),
  _PATH_KEY = sql.raw(PATH_KEY_SQL)

export function p95OfHistogram(buckets: Array<[number, number]>): number | null {
  const total = buckets.reduce((s, [, n]) => s + n, 0)
  if (!total) return null
  const k = Math.floor(0.95 * (total - 1))
  let seen = 0
  for (const [bucketUs, n] of buckets) {
    seen += n
    if (seen > k) return bucketUs / 1000
  }
  return null
}

const _avg = (sumUs: number, n: number) => (n ? Math.round(sumUs / n) / 1000 : null)

/**
 * Every figure in one statement: the plan's raw rows are read once (a
 * materialised CTE, each row with its sign) and, with a roll-up, added to its
 * hours' sums; keys whose sum is 0 (all their rows outside from..to) drop out.
 */
async function _statsOfPlan({ plan, byPath }: StatsRead, f: CompiledFilter, run: RunQuery): Promise<LogStats> {
  const rows = sql.join(
    plan.raw.map((p) => sql`SELECT ${_SIGN[p.sign]} AS s, source, status, host_domain, duration_ms, path FROM ${p.from} WHERE ${p.where}`),
    sql` UNION ALL `,
  )
  const w = plan.rollupWhere
  const withRollup = (rollup: SQL, raw: SQL) => (w ? sql`${rollup} UNION ALL ${raw}` : raw)
  const durationTable = _within(f, _DURATIONS) ? sql`logs_hourly_durations` : sql`logs_hourly_status_durations`
  const pathTable =
    byPath || _within(f, _PATHS)
      ? sql`logs_hourly_paths`
      : _within(f, _HOST_PATHS)
        ? sql`logs_hourly_host_paths`
        : _within(f, _PATHS_BY_STATUS)
          ? sql`logs_hourly_paths_by_status`
          : sql`logs_hourly_status_paths`
  const top5 = (kind: string, rollup: SQL, raw: SQL) =>
    sql`SELECT * FROM (SELECT ${kind} AS kind, k1, NULL AS k2, sum(n) AS n, 0 AS dn, 0 AS ds FROM (${withRollup(rollup, raw)}) GROUP BY 2 HAVING sum(n) > 0 ORDER BY 4 DESC, 2 LIMIT 5)`
  // Keyed by path, the counts come by status, and the durations' count and sum from the histogram by path
  // (read once, pd): those rows carry no class (k2 NULL, n 0).
  const pathDurations =
    byPath && w
      ? sql`, pd AS MATERIALIZED (SELECT source, bucket_us, sum(n) AS n, sum(dur_sum_us) AS ds FROM logs_hourly_path_durations WHERE ${w} GROUP BY 1, 2)`
      : sql``
  const countsRollup = byPath
    ? sql`SELECT source AS k1, status / 100 AS k2, sum(n) AS n, 0 AS dn, 0 AS ds FROM logs_hourly_paths_by_status WHERE ${w} GROUP BY 1, 2
      UNION ALL SELECT source, NULL, 0, sum(n), sum(ds) FROM pd GROUP BY 1`
    : sql`SELECT source AS k1, status / 100 AS k2, sum(n) AS n, sum(dur_n) AS dn, sum(dur_sum_us) AS ds FROM logs_hourly WHERE ${w} GROUP BY 1, 2`
  const durationsRollup = byPath
    ? sql`SELECT bucket_us AS k1, sum(n) AS n FROM pd GROUP BY 1`
    : sql`SELECT bucket_us AS k1, sum(n) AS n FROM ${durationTable} WHERE ${w} GROUP BY 1`
  const hostsRollup = byPath
    ? sql`SELECT host_domain AS k1, sum(n) AS n FROM logs_hourly_host_paths WHERE ${w} AND host_domain != '' GROUP BY 1`
    : sql`SELECT host_domain AS k1, sum(n) AS n FROM logs_hourly WHERE ${w} AND host_domain != '' GROUP BY 1`
  const all = await run(sql`WITH m AS MATERIALIZED (${rows})${pathDurations}
    SELECT 'c' AS kind, k1, k2, sum(n) AS n, sum(dn) AS dn, sum(ds) AS ds FROM (${withRollup(
      countsRollup,
      sql`SELECT source AS k1, coalesce(status, 0) / 100 AS k2, sum(s) AS n, sum(CASE WHEN duration_ms IS NULL THEN 0 ELSE s END) AS dn, coalesce(sum(s * ${_DUR_US}), 0) AS ds FROM m GROUP BY 1, 2`,
    )}) GROUP BY 2, 3 HAVING sum(n) != 0 OR sum(dn) != 0
    UNION ALL SELECT 'd', k1, NULL, sum(n), 0, 0 FROM (${withRollup(
      durationsRollup,
      sql`SELECT ${_BUCKET} AS k1, sum(s) AS n FROM m WHERE duration_ms IS NOT NULL GROUP BY 1`,
    )}) GROUP BY 2 HAVING sum(n) != 0
    UNION ALL ${top5('h', hostsRollup, sql`SELECT host_domain AS k1, sum(s) AS n FROM m WHERE host_domain IS NOT NULL GROUP BY 1`)}
    UNION ALL ${top5(
      'p',
      sql`SELECT path AS k1, sum(n) AS n FROM ${pathTable} WHERE ${w} GROUP BY 1`,
      sql`SELECT ${_PATH_KEY} AS k1, sum(s) AS n FROM m WHERE path IS NOT NULL GROUP BY 1`,
    )}`)
  const of = (kind: string) => all.filter((r) => r.kind === kind)
  const bySize = (a: Record<string, unknown>, b: Record<string, unknown>) =>
    Number(b.n) - Number(a.n) || (String(a.k1) < String(b.k1) ? -1 : 1)
  return _statsOf(
    of('c'),
    of('d').sort((a, b) => Number(a.k1) - Number(b.k1)),
    of('h').sort(bySize),
    of('p').sort(bySize),
  )
}

async function _statsFromSql(q: Record<string, unknown>, f: CompiledFilter, opts: LogStatsOptions): Promise<LogStats> {
  return withSnapshot(async (run) => {
    const state = await readRollupState(run)
    return _statsOfPlan(await planLogRead(q, f, run, state, true, opts), f, run)
  })
}

/** The figures from the grouped rows: counts (k1 source, k2 status class, n, dn, ds), histogram (k1 bucket, n), hosts and paths (k1, n, top 5 in order). */
function _statsOf(
  counts: Array<Record<string, unknown>>,
  histogram: Array<Record<string, unknown>>,
  hosts: Array<Record<string, unknown>>,
  paths: Array<Record<string, unknown>>,
): LogStats {
  const stats = _emptyStats()
  let durN = 0,
    durSum = 0
  for (const r of counts) {
    const n = Number(r.n)
    durN += Number(r.dn)
    durSum += Number(r.ds)
    if (!n) continue // durations alone (k2 NULL): counted by their own rows
    stats.total += n
    stats.by_source[String(r.k1)] = (stats.by_source[String(r.k1)] ?? 0) + n
    const cls = _CLASSES[Number(r.k2) - 1]
    if (cls) stats.by_status_class[cls] = (stats.by_status_class[cls] ?? 0) + n
  }
  stats.avg_duration_ms = _avg(durSum, durN)
  stats.p95_duration_ms = p95OfHistogram(histogram.map((r) => [Number(r.k1), Number(r.n)]))
  stats.top_hosts = hosts.map((r) => ({ host_domain: String(r.k1), count: Number(r.n) }))
  stats.top_paths = paths.map((r) => ({ path: String(r.k1), count: Number(r.n) }))
  return stats
}

const _emptyStats = (): LogStats => ({
  total: 0,
  by_status_class: {},
  by_source: {},
  avg_duration_ms: null,
  p95_duration_ms: null,
  top_hosts: [],
  top_paths: [],
})

function _top<K extends string>(counts: Map<string, number>, key: K): Array<Record<K, string> & { count: number }> {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, 5)
    .map(([k, count]) => ({ [key]: k, count }) as Record<K, string> & { count: number })
}

/** The same figures from rows filtered in JS (regex or CIDR filters). */
async function _statsFromRows(rows: AsyncIterable<LogRecord>): Promise<LogStats> {
  const stats = _emptyStats()
  const hosts = new Map<string, number>(),
    paths = new Map<string, number>(),
    buckets = new Map<number, number>()
  let durN = 0,
    durSum = 0
  for await (const r of rows) {
    stats.total++
    stats.by_source[r.source] = (stats.by_source[r.source] ?? 0) + 1
    const cls = r.status === null ? undefined : _CLASSES[Math.floor(r.status / 100) - 1]
    if (cls) stats.by_status_class[cls] = (stats.by_status_class[cls] ?? 0) + 1
    if (r.hostDomain !== null) hosts.set(r.hostDomain, (hosts.get(r.hostDomain) ?? 0) + 1)
    if (r.path !== null) {
      const p = pathKeyOf(r.path)
      paths.set(p, (paths.get(p) ?? 0) + 1)
    }
    if (r.durationMs !== null) {
      durN++
      durSum += Math.round(r.durationMs * 1000)
      const b = bucketUsOf(r.durationMs)
      buckets.set(b, (buckets.get(b) ?? 0) + 1)
    }
  }
  stats.avg_duration_ms = _avg(durSum, durN)
  stats.p95_duration_ms = p95OfHistogram([...buckets.entries()].sort((a, b) => a[0] - b[0]))
  stats.top_hosts = _top(hosts, 'host_domain')
  stats.top_paths = _top(paths, 'path')
  return stats
}

/** GET /api/logs/stats. */
export async function computeLogStats(
  q: Record<string, unknown>,
  opts: LogStatsOptions = {},
): Promise<{ stats: LogStats; scanLimited: boolean }> {
  const f = compileLogFilter(q)
  if (!f.predicate) return { stats: await _statsFromSql(q, f, opts), scanLimited: false }
  const scan = scanLogs(f)
  return { stats: await _statsFromRows(scan.rows), scanLimited: scan.limited() }
}

export interface TimeseriesPoint {
  ts: string
  total: number
  '2xx': number
  '3xx': number
  '4xx': number
  '5xx': number
}

/** GET /api/logs/timeseries: counts per bucket (minute, hour, day; UTC), oldest first, only buckets with rows. */
export async function computeLogTimeseries(
  q: Record<string, unknown>,
  opts: LogStatsOptions = {},
): Promise<{ points: TimeseriesPoint[]; scanLimited: boolean }> {
  const bucket = (q.bucket === undefined || q.bucket === '' ? 'hour' : String(q.bucket)) as keyof typeof BUCKETS
  if (!Object.hasOwn(BUCKETS, bucket)) throw badRequest('bucket: must be minute, hour or day')
  const size = BUCKETS[bucket]
  const sizeSql = sql.raw(String(size)) // a literal: a bound JS number is a REAL, and REAL division would not bucket
  const f = compileLogFilter(q)
  const points = new Map<number, TimeseriesPoint>()
  const add = (ts: number, cls: number, n: number) => {
    let p = points.get(ts)
    if (!p) {
      p = { ts: new Date(ts).toISOString(), total: 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 }
      points.set(ts, p)
    }
    p.total += n
    const key = _CLASSES[cls - 1]
    if (key && key !== '1xx') p[key] += n
  }
  let scanLimited = false
  if (f.predicate) {
    const scan = scanLogs(f)
    for await (const r of scan.rows) add(Math.floor(r.tsMs / size) * size, r.status === null ? 0 : Math.floor(r.status / 100), 1)
    scanLimited = scan.limited()
  } else {
    await withSnapshot(async (run) => {
      const state = await readRollupState(run)
      const { plan, byPath } = await planLogRead(q, f, run, state, bucket !== 'minute', opts)
      const rollupTable = byPath ? sql`logs_hourly_paths_by_status` : sql`logs_hourly`
      const rows = await run(
        sql`SELECT k1, k2, sum(n) AS n FROM (${unionOfPlan(plan, {
          rollup: (w) =>
            sql`SELECT (hour_ms / ${sizeSql}) * ${sizeSql} AS k1, status / 100 AS k2, sum(n) AS n FROM ${rollupTable} WHERE ${w} GROUP BY 1, 2`,
          raw: (from, w, sign) =>
            sql`SELECT (ts_ms / ${sizeSql}) * ${sizeSql} AS k1, coalesce(status, 0) / 100 AS k2, ${sign} * count(*) AS n FROM ${from} WHERE ${w} GROUP BY 1, 2`,
        })}) GROUP BY 1, 2 HAVING sum(n) != 0`,
      )
      for (const r of rows) add(Number(r.k1), Number(r.k2), Number(r.n))
    })
  }
  return { points: [...points.values()].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts)), scanLimited }
}
