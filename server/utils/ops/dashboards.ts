import { and, eq, gte, sql } from 'drizzle-orm'
import { hosts, logs } from '../../../db/schema'
import { getDb } from '../core/db'
import { lookupIp } from '../geo/readers'
import { logTimeseries } from '../logs/query'

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
 */
export async function securityLast24h(nowMs = Date.now()) {
  const since = nowMs - 24 * HOUR
  const db = getDb()
  const recent = gte(logs.tsMs, since)
  const [rate] = await db.select({ n: sql<number>`count(*)` }).from(logs).where(and(recent, eq(logs.source, 'caddy_access'), eq(logs.status, 429)))
  const [forbidden] = await db.select({ n: sql<number>`count(*)` }).from(logs).where(and(recent, eq(logs.source, 'caddy_access'), eq(logs.status, 403)))
  const [lan] = await db.select({ n: sql<number>`count(*)` }).from(logs).innerJoin(hosts, eq(hosts.id, logs.hostId))
    .where(and(recent, eq(logs.source, 'caddy_access'), eq(logs.status, 403), eq(hosts.lanOnly, true), sql`coalesce(${logs.country}, '') <> 'LAN'`))
  const [waf] = await db.select({ n: sql<number>`count(*)` }).from(logs).where(and(recent, eq(logs.source, 'waf_audit'), sql`${logs.status} >= 400`))
  const blockedBy = {
    rate_limit: Number(rate?.n ?? 0), lan_only: Number(lan?.n ?? 0), waf: Number(waf?.n ?? 0),
    bouncer: Math.max(0, Number(forbidden?.n ?? 0) - Number(lan?.n ?? 0) - Number(waf?.n ?? 0)),
  }
  const blocked = and(recent, sql`((${logs.source} = 'caddy_access' AND ${logs.status} IN (403, 429)) OR (${logs.source} = 'waf_audit' AND ${logs.status} >= 400))`)
  const countries = await db.select({ country: logs.country, n: sql<number>`count(*)` }).from(logs)
    .where(and(blocked, sql`${logs.country} IS NOT NULL AND ${logs.country} <> 'LAN'`)).groupBy(logs.country).orderBy(sql`count(*) DESC`, logs.country).limit(50)
  const ips = await db.select({ ip: logs.remoteIp, n: sql<number>`count(*)` }).from(logs)
    .where(and(blocked, sql`${logs.remoteIp} IS NOT NULL`)).groupBy(logs.remoteIp).orderBy(sql`count(*) DESC`, logs.remoteIp).limit(10)
  return {
    blocked_24h: blockedBy.rate_limit + blockedBy.lan_only + blockedBy.waf + blockedBy.bouncer,
    blocked_by: blockedBy,
    attackers_by_country: countries.map((c) => ({ country: c.country, count: Number(c.n) })),
    top_ips: ips.map((r) => { const g = lookupIp(r.ip!); return { ip: r.ip, count: Number(r.n), country: g.country, as_number: g.as_number } }),
  }
}
