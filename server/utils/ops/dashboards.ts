import { eq, sql } from 'drizzle-orm'
import { hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { lookupIp } from '../geo/readers'
import { compileLogFilter } from '../logs/filters'
import { logTimeseries } from '../logs/query'
import { withSnapshot } from '../logs/read'
import { BLOCKED_SQL } from '../logs/rollup'
import { readRollupState, rollupUnion } from '../logs/stats'

const HOUR = 3_600_000

/** The last 24 whole hours plus the current one's start: 24 buckets, oldest first, zeros included. */
export async function trafficLast24h(nowMs = Date.now()) {
  const firstBucket = Math.floor(nowMs / HOUR) * HOUR - 23 * HOUR
  const series = await logTimeseries({ source: 'caddy_access', bucket: 'hour', from: String(firstBucket) })
  const byTs = new Map(series.map((b) => [Date.parse(b.ts), b]))
  return Array.from({ length: 24 }, (_, i) => {
    const ts = firstBucket + i * HOUR
    return byTs.get(ts) ?? { ts: new Date(ts).toISOString(), total: 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 }
  })
}

/**
 * Blocked requests of the last 24 h by reason. The access log does not say
 * which handler refused a request, so the reason is derived: 429 = rate limit;
 * a 403 of a LAN-only host to a non-LAN client = LAN gate; WAF = the WAF's own
 * audit rows that blocked; the other 403s = the bouncer.
 *
 * Read from the blocked-requests roll-up (logs_hourly_blocked) for whole hours
 * plus the partial first hour (its raw rows, or its whole hour less the rows
 * before the window, whichever reads fewer) and the raw rows above the roll-up mark,
 * in one snapshot (the same split as /api/logs/stats): exact, and a few
 * thousand rows read instead of a day of traffic.
 */
export async function securityLast24h(nowMs = Date.now()) {
  const f = compileLogFilter({ from: String(nowMs - 24 * HOUR) })
  const lanOnlyHosts = new Set((await getDb().select({ id: hosts.id }).from(hosts).where(eq(hosts.lanOnly, true))).map((h) => h.id))
  return withSnapshot(async (run) => {
    const state = await readRollupState(run)
    /** Sums `n` of the blocked rows grouped by the key columns (roll-up side: NULLs stored as '' / 0; raw side: coalesced the same way). */
    const blocked = (keys: string[], rawKeys: string[]) => {
      const groupBy = sql.raw(keys.map((_, i) => i + 1).join(', '))
      return rollupUnion(f, state, true, {
        rollup: (w) => sql`SELECT ${sql.raw(keys.join(', '))}, sum(n) AS n FROM logs_hourly_blocked WHERE ${w} GROUP BY ${groupBy}`,
        raw: (from, w, sign) =>
          sql`SELECT ${sql.raw(rawKeys.join(', '))}, ${sign} * count(*) AS n FROM ${from} WHERE ${w} AND ${sql.raw(BLOCKED_SQL)} GROUP BY ${groupBy}`,
      })
    }
    const reasons = await run(
      sql`SELECT source, status, host_id, lan, sum(n) AS n FROM (${blocked(
        ['source', 'status', 'host_id', "country = 'LAN' AS lan"],
        ['source', 'coalesce(status, 0) AS status', 'coalesce(host_id, 0) AS host_id', "coalesce(country, '') = 'LAN' AS lan"],
      )}) GROUP BY 1, 2, 3, 4 HAVING sum(n) != 0`,
    )
    const blockedBy = { rate_limit: 0, lan_only: 0, waf: 0, bouncer: 0 }
    let forbidden = 0
    for (const r of reasons) {
      const n = Number(r.n)
      if (r.source === 'waf_audit') blockedBy.waf += n
      else if (Number(r.status) === 429) blockedBy.rate_limit += n
      else {
        forbidden += n
        if (lanOnlyHosts.has(Number(r.host_id)) && !Number(r.lan)) blockedBy.lan_only += n
      }
    }
    // Each WAF block also has its 403 access line: those are not the bouncer's.
    blockedBy.bouncer = Math.max(0, forbidden - blockedBy.lan_only - blockedBy.waf)
    const countries = await run(sql`SELECT country, sum(n) AS n FROM (${blocked(['country'], ["coalesce(country, '') AS country"])})
      WHERE country NOT IN ('', 'LAN') GROUP BY 1 HAVING sum(n) > 0 ORDER BY 2 DESC, 1 LIMIT 50`)
    const ips = await run(sql`SELECT remote_ip, sum(n) AS n FROM (${blocked(['remote_ip'], ["coalesce(remote_ip, '') AS remote_ip"])})
      WHERE remote_ip <> '' GROUP BY 1 HAVING sum(n) > 0 ORDER BY 2 DESC, 1 LIMIT 10`)
    // Stream connections (source layer4, docs/streams.md "Connection rows"): all, and those refused
    // (a ban, the LAN gate, an access list: the rows at level warn). Not part of blocked_24h, which
    // counts HTTP requests as the spec names it.
    const streamFilter = compileLogFilter({ source: 'layer4', from: String(nowMs - 24 * HOUR) })
    const connections = await run(
      sql`SELECT level, sum(n) AS n FROM (${rollupUnion(streamFilter, state, true, {
        rollup: (w) => sql`SELECT level, sum(n) AS n FROM logs_hourly WHERE ${w} GROUP BY 1`,
        raw: (from, w, sign) => sql`SELECT coalesce(level, '') AS level, ${sign} * count(*) AS n FROM ${from} WHERE ${w} GROUP BY 1`,
      })}) GROUP BY 1`,
    )
    const connectionsOf = (refusedOnly: boolean) =>
      connections.filter((r) => !refusedOnly || r.level === 'warn').reduce((n, r) => n + Number(r.n), 0)
    return {
      connections_24h: { total: connectionsOf(false), refused: connectionsOf(true) },
      blocked_24h: blockedBy.rate_limit + blockedBy.lan_only + blockedBy.waf + blockedBy.bouncer,
      blocked_by: blockedBy,
      attackers_by_country: countries.map((c) => ({ country: String(c.country), count: Number(c.n) })),
      top_ips: ips.map((r) => {
        const ip = String(r.remote_ip)
        const g = lookupIp(ip)
        return { ip, count: Number(r.n), country: g.country, as_number: g.as_number }
      }),
    }
  })
}
