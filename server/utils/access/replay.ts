import { isIP } from 'node:net'
import { eq, inArray } from 'drizzle-orm'
import { z } from 'zod'
import { accessLists, hosts, rules, sessions } from '../../../db/schema'
import { getClient, getDb } from '../core/db'
import { badRequest } from '../core/errors'
import { openGeoReader } from '../geo/readers'
import { countryOfRecord } from '../geo/walker'
import { LAN_CIDRS, ipToBigInt, netContains, parseCidr, type Family, type Net } from '../geo/ip'
import { normalizeCountryCode } from '../security/countries'
import { continentOf } from './continents'
import { geoPolicySchema, type GeoPolicy } from './schemas'

// "Try before it applies" (docs/access-control.md): a geo and network policy replayed against the
// access rows of the last days, so an admin sees what it would have refused before saving it.
// evaluatePolicy is the panel's one TypeScript copy of the policy's semantics (the proxy's own is
// in Go); the rows are grouped in SQL first, so the policy runs once per distinct client, not per row.

export type Verdict = 'allow' | 'deny'

/** A client as an access row records it: the address, and what the databases said at ingestion. */
export interface ReplayClient {
  ip: string | null
  /** Upper-case country code; null or LAN: the country database did not place the address. */
  country: string | null
  asn: number | null
}

/** The address as a number, IPv4-mapped IPv6 read as IPv4 (as the proxy sees the client). */
function _addressOf(ip: string | null): { family: Family; value: bigint } | null {
  if (!ip || !isIP(ip)) return null
  const a = ipToBigInt(ip)
  if (a.family === 6 && a.value >> 32n === 0xffffn) return { family: 4, value: a.value & 0xffffffffn }
  return a
}

/** Whether the country database placed the client (LAN and null are not places). */
export const isPlaced = (country: string | null): country is string => country !== null && country !== 'LAN'

/**
 * The policy as a function of a client. Binding semantics (docs/access-control.md, "Geo and network
 * rules"): rules in order, the first that matches decides, `default` when none does. A rule matches
 * by address (its `cidrs`, the IP rules of its access list, whatever their allow or deny), by AS
 * number when the row has one, by country and continent when the country database placed the
 * client (as the proxy's matcher, deploy/proxy/caddy/geoext). An unplaced client no rule matched
 * gets `unknown_address`: `allow`, `deny`, or (`allow_lan`) allow for private and loopback
 * addresses and `default` for the others.
 * `accessListNets`: the IP rules of every access list a rule names.
 */
export function compilePolicy(policy: GeoPolicy, accessListNets: ReadonlyMap<number, readonly Net[]> = new Map()) {
  const compiled = policy.rules.map((r) => ({
    action: r.action,
    nets: [...r.cidrs.map(parseCidr), ...(r.access_list_id !== null ? (accessListNets.get(r.access_list_id) ?? []) : [])],
    countries: new Set(r.countries),
    continents: new Set<string>(r.continents),
    asns: new Set(r.asns),
  }))
  return (client: ReplayClient): Verdict => {
    const addr = _addressOf(client.ip)
    const placed = isPlaced(client.country)
    const continent = placed ? continentOf(client.country) : null
    for (const r of compiled) {
      if (addr && r.nets.some((n) => netContains(n, addr.family, addr.value))) return r.action
      if (placed && r.countries.has(client.country!)) return r.action
      if (continent && r.continents.has(continent)) return r.action
      if (client.asn !== null && r.asns.has(client.asn)) return r.action
    }
    if (!placed) {
      if (policy.unknown_address !== 'allow_lan') return policy.unknown_address
      if (addr && LAN_CIDRS.some((n) => netContains(n, addr.family, addr.value))) return 'allow'
    }
    return policy.default
  }
}

/** One policy, one client (tests, and the addresses of the caller). */
export function evaluatePolicy(policy: GeoPolicy, client: ReplayClient, accessListNets?: ReadonlyMap<number, readonly Net[]>): Verdict {
  return compilePolicy(policy, accessListNets)(client)
}

// ---- the API ----

const _days = z
  .number({ message: 'must be a number of days from 1 to 90' })
  .int('must be a whole number of days')
  .min(1, 'must be at least 1 day')
  .max(90, 'must be at most 90 days')

export const previewBody = z.strictObject({
  policy: geoPolicySchema,
  host_id: z.number().int().positive('must be a host id').nullable().default(null).describe("null: every host's rows"),
  rule_id: z.number().int().positive('must be a path rule id').nullable().default(null).describe("only that path rule's rows"),
  days: _days.default(7).describe('the window: the last N days'),
})
export type PreviewBody = z.output<typeof previewBody>

export const previewQuery = z.strictObject({
  days: z.coerce
    .number({ message: 'must be a number of days from 1 to 90' })
    .pipe(_days)
    .default(7)
    .describe('the window: the last N days'),
})

export interface PreviewAnswer {
  days: number
  since: string
  requests: number
  refused_requests: number
  refused_addresses: number
  unknown_requests: number
  top_countries: Array<{ country: string; name: string; requests: number }>
  top_networks: Array<{ asn: number; name: string | null; requests: number }>
  top_paths: Array<{ path: string; requests: number }>
  lockout: { would_lock_you_out: boolean; your_addresses: Array<{ ip: string; refused: boolean }> }
}

/** Who asks: their user id (their sessions' addresses) and the address of this request. */
export interface PreviewCaller {
  userId: number
  currentIp: string | null
}

const _TOP = 10
const _YOUR_ADDRESSES = 20
const _DAY_MS = 86_400_000
const _regionNames = new Intl.DisplayNames(['en'], { type: 'region' })

async function _accessListNets(policy: GeoPolicy): Promise<Map<number, Net[]>> {
  const ids = [...new Set(policy.rules.flatMap((r) => (r.access_list_id !== null ? [r.access_list_id] : [])))]
  if (!ids.length) return new Map()
  const found = await getDb()
    .select({ id: accessLists.id, ipRules: accessLists.ipRules })
    .from(accessLists)
    .where(inArray(accessLists.id, ids))
  const byId = new Map(found.map((l) => [l.id, l.ipRules.map((r) => parseCidr(r.source))]))
  policy.rules.forEach((r, i) => {
    if (r.access_list_id !== null && !byId.has(r.access_list_id))
      throw badRequest(`policy.rules[${i}].access_list_id: access list ${r.access_list_id} does not exist`)
  })
  return byId
}

async function _checkScope(hostId: number | null, ruleId: number | null): Promise<void> {
  if (hostId !== null && !(await getDb().select({ id: hosts.id }).from(hosts).where(eq(hosts.id, hostId)).get()))
    throw badRequest(`host_id: host ${hostId} does not exist`)
  if (ruleId === null) return
  const rule = await getDb().select({ hostId: rules.hostId }).from(rules).where(eq(rules.id, ruleId)).get()
  if (!rule) throw badRequest(`rule_id: path rule ${ruleId} does not exist`)
  if (hostId !== null && rule.hostId !== hostId)
    throw badRequest(`rule_id: path rule ${ruleId} belongs to host ${rule.hostId}, not to host ${hostId}`)
}

interface _Group {
  ip: string | null
  country: string | null
  asn: number | null
  n: number
  refused: boolean
}

const _bump = <K>(m: Map<K, number>, k: K, n: number) => m.set(k, (m.get(k) ?? 0) + n)
/** The `_TOP` largest, ties by key (the oracle test sorts the same way). */
function _top<K extends string | number>(m: Map<K, number>): Array<[K, number]> {
  return [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, _TOP)
}

/** An AS's name from asn.mmdb, read at an address the rows place in it. */
function _networkName(asn: number, sampleIp: string | null): string | null {
  if (!sampleIp) return null
  try {
    const rec = openGeoReader('asn')?.get(sampleIp) as { autonomous_system_number?: number; autonomous_system_organization?: string } | null
    return rec?.autonomous_system_number === asn && typeof rec.autonomous_system_organization === 'string'
      ? rec.autonomous_system_organization
      : null
  } catch {
    return null
  }
}

/** What the country and AS databases say now of an address (LAN for private ones, as at ingestion). */
function _clientNow(ip: string): ReplayClient {
  const addr = _addressOf(ip)
  if (addr && LAN_CIDRS.some((n) => netContains(n, addr.family, addr.value))) return { ip, country: 'LAN', asn: null }
  try {
    const asn = (openGeoReader('asn')?.get(ip) as { autonomous_system_number?: number } | null)?.autonomous_system_number
    return { ip, country: countryOfRecord(openGeoReader('country')?.get(ip)) ?? null, asn: typeof asn === 'number' ? asn : null }
  } catch {
    return { ip, country: null, asn: null }
  }
}

/** The caller's addresses: this request's, then their sessions' seen in the window, newest first. */
async function _yourAddresses(caller: PreviewCaller, sinceMs: number): Promise<string[]> {
  const rows = await getDb()
    .select({ ip: sessions.remoteIp, seen: sessions.lastSeenAtMs })
    .from(sessions)
    .where(eq(sessions.userId, caller.userId))
  const seen = rows.filter((r) => r.ip && isIP(r.ip) && r.seen >= sinceMs).sort((a, b) => b.seen - a.seen)
  return [...new Set([...(caller.currentIp && isIP(caller.currentIp) ? [caller.currentIp] : []), ...seen.map((r) => r.ip!)])].slice(
    0,
    _YOUR_ADDRESSES,
  )
}

/**
 * The replay: access rows (caddy_access) of the window, of one host and one path rule when asked,
 * counted as the policy would have answered each. One grouped read of (address, country, AS) with
 * counts, the policy once per group, then one grouped read of paths restricted to the refused groups.
 */
export async function previewPolicy(body: PreviewBody, caller: PreviewCaller, nowMs = Date.now()): Promise<PreviewAnswer> {
  await _checkScope(body.host_id, body.rule_id)
  const verdict = compilePolicy(body.policy, await _accessListNets(body.policy))
  const sinceMs = nowMs - body.days * _DAY_MS
  const client = getClient()
  // Both reads see the same rows: ingestion may append while they run.
  const top = Number((await client.execute('SELECT coalesce(max(id), 0) AS m FROM logs')).rows[0]!.m)
  let where = "source = 'caddy_access' AND ts_ms >= ? AND id <= ?"
  const args: Array<number | string> = [sinceMs, top]
  if (body.host_id !== null) {
    where += ' AND host_id = ?'
    args.push(body.host_id)
  }
  if (body.rule_id !== null) {
    where += ' AND rule_id = ?'
    args.push(body.rule_id)
  }
  const rs = await client.execute({
    // In the index's order (migration 0052): no table read, no sort.
    sql: `SELECT remote_ip AS ip, country, asn, count(*) AS n FROM logs INDEXED BY logs_access_client_idx WHERE ${where} GROUP BY remote_ip, country, asn`,
    args,
  })
  const groups: _Group[] = rs.rows.map((r) => {
    const g = { ip: r.ip as string | null, country: r.country as string | null, asn: r.asn === null ? null : Number(r.asn), n: Number(r.n) }
    return { ...g, refused: verdict(g) === 'deny' }
  })

  let requests = 0
  let refusedRequests = 0
  let unknownRequests = 0
  const refusedIps = new Set<string>()
  const allowedIps = new Set<string>()
  const byCountry = new Map<string, number>()
  const byAsn = new Map<number, number>()
  const asnSample = new Map<number, string | null>()
  for (const g of groups) {
    requests += g.n
    if (!isPlaced(g.country)) unknownRequests += g.n
    if (!g.refused) {
      if (g.ip !== null) allowedIps.add(g.ip)
      continue
    }
    refusedRequests += g.n
    if (g.ip !== null) refusedIps.add(g.ip)
    if (isPlaced(g.country)) _bump(byCountry, g.country, g.n)
    if (g.asn !== null) {
      _bump(byAsn, g.asn, g.n)
      if (!asnSample.get(g.asn)) asnSample.set(g.asn, g.ip)
    }
  }

  const yours = await _yourAddresses(caller, sinceMs)
  const yourAddresses = yours.map((ip) => ({ ip, refused: verdict(_clientNow(ip)) === 'deny' }))
  return {
    days: body.days,
    since: new Date(sinceMs).toISOString(),
    requests,
    refused_requests: refusedRequests,
    refused_addresses: refusedIps.size,
    unknown_requests: unknownRequests,
    top_countries: _top(byCountry).map(([country, n]) => ({ country, name: _regionNames.of(country) ?? country, requests: n })),
    top_networks: _top(byAsn).map(([asn, n]) => ({ asn, name: _networkName(asn, asnSample.get(asn) ?? null), requests: n })),
    top_paths: refusedRequests ? await _topRefusedPaths(where, args, groups, refusedIps, allowedIps) : [],
    lockout: { would_lock_you_out: yourAddresses.some((a) => a.refused), your_addresses: yourAddresses },
  }
}

/**
 * The largest paths among refused requests. The rows are picked by address: the addresses all of
 * whose groups were refused by a list, the few whose country or AS changed inside the window (a
 * database refresh) with a mixed answer by their (address, country, AS), rows without an address
 * by (country, AS).
 */
async function _topRefusedPaths(
  where: string,
  args: Array<number | string>,
  groups: _Group[],
  refusedIps: Set<string>,
  allowedIps: Set<string>,
) {
  const whole = [...refusedIps].filter((ip) => !allowedIps.has(ip))
  const mixed = groups.filter((g) => g.refused && g.ip !== null && allowedIps.has(g.ip)).map((g) => [g.ip, g.country, g.asn])
  const noAddress = groups.filter((g) => g.refused && g.ip === null).map((g) => [g.country, g.asn])
  // The refused addresses are sought in the client index, which also carries the path: no table
  // read. One plain arm per kind of key, so that each can seek. (A second index ordered by path made
  // a replay refusing most clients ~15% faster but halved ingestion: not worth it for a preview.)
  const index = 'logs_access_client_idx'
  const arms: string[] = []
  const armArgs: Array<number | string> = []
  const arm = (from: string, test: string, list: unknown[]) => {
    if (!list.length) return
    arms.push(`SELECT path, count(*) AS n FROM logs INDEXED BY ${from} WHERE ${where} AND ${test} GROUP BY path`)
    // The list once per `?` of the test (positional parameters only: arms come and go).
    armArgs.push(...args, ...Array(test.split('?').length - 1).fill(JSON.stringify(list)))
  }
  arm(index, 'remote_ip IN (SELECT value FROM json_each(?))', whole)
  arm(
    index,
    `remote_ip IN (SELECT value ->> 0 FROM json_each(?))
      AND EXISTS (SELECT 1 FROM json_each(?) j WHERE j.value ->> 0 = remote_ip AND j.value ->> 1 IS country AND j.value ->> 2 IS asn)`,
    mixed,
  )
  arm(
    'logs_access_client_idx',
    'remote_ip IS NULL AND EXISTS (SELECT 1 FROM json_each(?) j WHERE j.value ->> 0 IS country AND j.value ->> 1 IS asn)',
    noAddress,
  )
  const rs = await getClient().execute({
    sql: `SELECT path, sum(n) AS n FROM (${arms.join(' UNION ALL ')}) WHERE path IS NOT NULL GROUP BY path ORDER BY n DESC, path ASC LIMIT ${_TOP}`,
    args: armArgs,
  })
  return rs.rows.map((r) => ({ path: r.path as string, requests: Number(r.n) }))
}

/** What banning a country would have refused: deny it, allow the rest, every host's rows. */
export async function countryBanPreview(rawCc: string, days: number, caller: PreviewCaller, nowMs = Date.now()): Promise<PreviewAnswer> {
  const cc = normalizeCountryCode(rawCc, 'path')
  const policy = geoPolicySchema.parse({ rules: [{ action: 'deny', countries: [cc] }], default: 'allow' })
  return previewPolicy({ policy, host_id: null, rule_id: null, days }, caller, nowMs)
}
