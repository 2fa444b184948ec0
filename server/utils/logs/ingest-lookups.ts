import { getDb } from '../core/db'
import { hostNames, streams } from '../../../db/schema'
import { openGeoReader } from '../geo/readers'
import { countryOfRecord } from '../geo/walker'
import { isLanAddress } from '../geo/ip'
import type { ParseContext } from './parse'

// The ingester's lookups while parsing (ingester.ts): host id by domain and country by address,
// each a cache with its own refresh rule. Kept apart from the reading and committing stages so
// that the parse context is the only thing they share.

const _HOST_REFRESH_MS = 2_000

// Domain -> host id, from host_names; re-read when a domain is unknown (at most every 2 s).
const _hosts = { atMs: 0, byName: new Map<string, number>(), generation: 0 }

/**
 * After a change of host names: the next line re-reads them, whatever the throttle says. Without
 * it, a WAF line (which names its host only by domain) of a host created less than 2 s after the
 * last re-read kept host_id null for good.
 */
export function forgetHostNames(): void {
  _hosts.generation++
  _hosts.atMs = 0
}

/** Re-reads host names when stale: every 30 s, or every 2 s when `force` (a domain was unknown). */
export async function refreshHosts(force: boolean): Promise<void> {
  if (Date.now() - _hosts.atMs < (force ? _HOST_REFRESH_MS : 30_000)) return
  const generation = _hosts.generation
  const rows = await getDb().select().from(hostNames)
  // A change committed while this read ran may be missing from it: keep the cache stale then.
  _hosts.atMs = generation === _hosts.generation ? Date.now() : 0
  _hosts.byName = new Map(rows.map((r) => [r.name.toLowerCase(), r.hostId]))
}

export function hostIdOf(domain: string): number | null {
  return _hosts.byName.get(domain) ?? null
}

// Country per address (LAN for private ones, as lookupIp answers) and AS number per address (none
// for private ones): the readers are taken once per group of lines, and a memo in front of each is
// emptied every minute (a refresh may change answers).
const _geo = {
  reader: null as ReturnType<typeof openGeoReader>,
  asnReader: null as ReturnType<typeof openGeoReader>,
  countries: new Map<string, string | null>(),
  asns: new Map<string, number | null>(),
  atMs: Date.now(),
}

function _countryOf(ip: string): string | null {
  let c = _geo.countries.get(ip)
  if (c === undefined) {
    try {
      c = isLanAddress(ip) ? 'LAN' : (countryOfRecord(_geo.reader?.get(ip)) ?? null)
    } catch {
      c = null
    }
    _geo.countries.set(ip, c)
  }
  return c
}

function _asnOf(ip: string): number | null {
  let a = _geo.asns.get(ip)
  if (a === undefined) {
    try {
      const n = isLanAddress(ip)
        ? null
        : (_geo.asnReader?.get(ip) as { autonomous_system_number?: unknown } | null)?.autonomous_system_number
      a = typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= 4_294_967_295 ? n : null
    } catch {
      a = null
    }
    _geo.asns.set(ip, a)
  }
  return a
}

/** Takes the current country and ASN readers for the next group of lines; empties the memos when old or large. */
export function refreshGeo(): void {
  _geo.reader = openGeoReader('country')
  _geo.asnReader = openGeoReader('asn')
  if (Date.now() - _geo.atMs > 60_000 || _geo.countries.size > 50_000 || _geo.asns.size > 50_000) {
    _geo.countries = new Map()
    _geo.asns = new Map()
    _geo.atMs = Date.now()
  }
}

// Stream id -> name, for layer4 rows (their lines carry the id only): re-read every 30 s, and at
// once for an id never looked up (a stream created a moment ago: a time throttle would leave its
// first rows nameless for good). An id still missing after a read (a deleted stream) is not asked
// for again until the next periodic read.
const _streams = { atMs: 0, byId: new Map<number, string>(), absent: new Set<number>() }

/** Re-reads stream names when stale (30 s) or when `ids` names one neither known nor known absent. */
export async function refreshStreams(ids: number[] = []): Promise<void> {
  const unseen = ids.some((id) => !_streams.byId.has(id) && !_streams.absent.has(id))
  if (!unseen && Date.now() - _streams.atMs < 30_000) return
  _streams.atMs = Date.now()
  const rows = await getDb().select({ id: streams.id, name: streams.name }).from(streams)
  _streams.byId = new Map(rows.map((r) => [r.id, r.name]))
  _streams.absent = new Set(ids.filter((id) => !_streams.byId.has(id)))
}

export function streamNameOf(id: number): string | null {
  return _streams.byId.get(id) ?? null
}

export const parseContext: ParseContext = { hostIdOf, countryOf: _countryOf, asnOf: _asnOf, streamNameOf }
