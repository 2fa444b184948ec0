import { and, desc, eq, lt, sql, type SQL } from 'drizzle-orm'
import { logs } from '../../../db/schema'
import { getDb } from '../core/db'
import { badRequest, notFound } from '../core/errors'
import { compileLogFilter, type CompiledFilter } from './filters'
import { presentLog, type LogRecord } from './present'

/** Rows SQL returns that a JS-only filter (regex, CIDR) may examine per request. */
export const SCAN_LIMIT_ROWS = 200_000
const _PAGE = 2_000

function _limit(v: unknown): number {
  if (v === undefined || v === '') return 100
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw badRequest('limit: must be an integer from 1 to 1000')
  return n
}

/** Rows matching SQL and the JS predicate, newest first, examining at most SCAN_LIMIT_ROWS. */
async function* _scan(f: CompiledFilter, beforeId?: number): AsyncGenerator<LogRecord> {
  let cursor = beforeId
  let scanned = 0
  for (;;) {
    const where = and(f.where, cursor === undefined ? undefined : lt(logs.id, cursor))
    const page = await getDb().select().from(logs).where(where).orderBy(desc(logs.id)).limit(_PAGE)
    for (const r of page) if (!f.predicate || f.predicate(presentLog(r))) yield r
    scanned += page.length
    if (page.length < _PAGE || scanned >= SCAN_LIMIT_ROWS) return
    cursor = page.at(-1)!.id
  }
}

export async function listLogs(q: Record<string, unknown>) {
  const f = compileLogFilter(q)
  const limit = _limit(q.limit)
  let beforeId: number | undefined
  if (q.before_id !== undefined && q.before_id !== '') {
    beforeId = Number(q.before_id)
    if (!Number.isInteger(beforeId) || beforeId < 1) throw badRequest('before_id: must be a positive integer')
  }
  if (!f.predicate) {
    const rows = await getDb().select().from(logs).where(and(f.where, beforeId === undefined ? undefined : lt(logs.id, beforeId))).orderBy(desc(logs.id)).limit(limit)
    return rows.map(presentLog)
  }
  const out = []
  for await (const r of _scan(f, beforeId)) { out.push(presentLog(r)); if (out.length >= limit) break }
  return out
}

export async function getLog(id: number) {
  const row = await getDb().select().from(logs).where(eq(logs.id, id)).get()
  if (!row) throw notFound('log row', id)
  return presentLog(row)
}

const _classOf = (status: number | null) => (status && status >= 200 && status < 600 ? `${Math.floor(status / 100)}xx` : null)

function _top(counts: Map<string, number>, key: string) {
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5).map(([k, count]) => ({ [key]: k, count }))
}

export async function logStats(q: Record<string, unknown>) {
  const f = compileLogFilter(q)
  if (f.predicate) {
    const byClass: Record<string, number> = {}, bySource: Record<string, number> = {}
    const hosts = new Map<string, number>(), paths = new Map<string, number>()
    const durations: number[] = []
    let total = 0
    for await (const r of _scan(f)) {
      total++
      const c = _classOf(r.status); if (c) byClass[c] = (byClass[c] ?? 0) + 1
      bySource[r.source] = (bySource[r.source] ?? 0) + 1
      if (r.hostDomain) hosts.set(r.hostDomain, (hosts.get(r.hostDomain) ?? 0) + 1)
      if (r.path) paths.set(r.path, (paths.get(r.path) ?? 0) + 1)
      if (r.durationMs !== null) durations.push(r.durationMs)
    }
    durations.sort((a, b) => a - b)
    return {
      total, by_status_class: byClass, by_source: bySource,
      avg_duration_ms: durations.length ? durations.reduce((s, d) => s + d, 0) / durations.length : null,
      p95_duration_ms: durations.length ? durations[Math.floor(0.95 * (durations.length - 1))]! : null,
      top_hosts: _top(hosts, 'host_domain'), top_paths: _top(paths, 'path'),
    }
  }
  const db = getDb()
  const w = f.where
  const whereAnd = (extra: SQL) => (w ? and(w, extra) : extra)
  const [totals, classes, sources, hosts, paths] = await Promise.all([
    db.select({ total: sql<number>`count(*)`, avg: sql<number | null>`avg(${logs.durationMs})`, n: sql<number>`count(${logs.durationMs})` }).from(logs).where(w).get(),
    db.select({ c: sql<number>`${logs.status} / 100`, n: sql<number>`count(*)` }).from(logs).where(whereAnd(sql`${logs.status} BETWEEN 200 AND 599`)).groupBy(sql`${logs.status} / 100`),
    db.select({ s: logs.source, n: sql<number>`count(*)` }).from(logs).where(w).groupBy(logs.source),
    db.select({ k: logs.hostDomain, n: sql<number>`count(*)` }).from(logs).where(whereAnd(sql`${logs.hostDomain} IS NOT NULL`)).groupBy(logs.hostDomain).orderBy(sql`count(*) DESC`, logs.hostDomain).limit(5),
    db.select({ k: logs.path, n: sql<number>`count(*)` }).from(logs).where(whereAnd(sql`${logs.path} IS NOT NULL`)).groupBy(logs.path).orderBy(sql`count(*) DESC`, logs.path).limit(5),
  ])
  const n = Number(totals?.n ?? 0)
  const p95 = n ? await db.select({ d: logs.durationMs }).from(logs).where(whereAnd(sql`${logs.durationMs} IS NOT NULL`)).orderBy(logs.durationMs).limit(1).offset(Math.floor(0.95 * (n - 1))).get() : undefined
  return {
    total: Number(totals?.total ?? 0),
    by_status_class: Object.fromEntries(classes.map((c) => [`${c.c}xx`, Number(c.n)])),
    by_source: Object.fromEntries(sources.map((s) => [s.s, Number(s.n)])),
    avg_duration_ms: totals?.avg ?? null, p95_duration_ms: p95?.d ?? null,
    top_hosts: hosts.map((h) => ({ host_domain: h.k, count: Number(h.n) })), top_paths: paths.map((p) => ({ path: p.k, count: Number(p.n) })),
  }
}

export const BUCKETS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const

export async function logTimeseries(q: Record<string, unknown>) {
  const bucket = (q.bucket ?? 'hour') as keyof typeof BUCKETS
  if (!(bucket in BUCKETS)) throw badRequest('bucket: must be minute, hour or day')
  const size = BUCKETS[bucket]
  const f = compileLogFilter(q)
  const buckets = new Map<number, Record<string, number>>()
  const add = (ts: number, status: number | null, n = 1) => {
    const b = Math.floor(ts / size) * size
    const e = buckets.get(b) ?? { total: 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 }
    e.total! += n
    const c = _classOf(status); if (c && c in e) e[c]! += n
    buckets.set(b, e)
  }
  if (f.predicate) {
    for await (const r of _scan(f)) add(r.tsMs, r.status)
  } else {
    const rows = await getDb().select({
      b: sql<number>`(${logs.tsMs} / ${size}) * ${size}`, c: sql<number | null>`${logs.status} / 100`, n: sql<number>`count(*)`,
    }).from(logs).where(f.where).groupBy(sql`1`, sql`2`)
    for (const r of rows) add(Number(r.b), r.c === null ? null : Number(r.c) * 100, Number(r.n))
  }
  return [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([ts, e]) => ({ ts: new Date(ts).toISOString(), total: e.total, '2xx': e['2xx'], '3xx': e['3xx'], '4xx': e['4xx'], '5xx': e['5xx'] }))
}

