import type { Reader } from 'maxmind'
import { z } from 'zod'
import { badRequest } from '../core/errors'
import { safeText } from '../core/validate'
import { geoVersion, openGeoReader } from './readers'

// The networks (AS number → organisation) of asn.mmdb, so an operator picks a network by its
// name ("hetzner") rather than by a number looked up elsewhere. maxmind only answers point
// lookups, so the index is built from the file itself, once per file: it is kept with the reader
// it came from, and openGeoReader hands out a new reader when a refresh replaces the file.

export interface AsnName {
  asn: number
  name: string
}
interface _Index {
  reader: Reader<any>
  byAsn: Map<number, string>
  /** Sorted by name, then number; `key` is the name folded for matching. */
  entries: Array<AsnName & { key: string }>
}
let _index: _Index | null = null

const _fold = (s: string) =>
  s
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()

/**
 * Every data record the search tree points at. A record of a node above the node count is a
 * pointer into the data section, so a pass over the nodes finds them all without walking
 * addresses (an AS database has ~10^6 networks but ~10^5 distinct records).
 */
function _dataRecords(reader: Reader<any>): unknown[] {
  const internal = reader as any
  const db: Buffer = internal.db
  const { nodeCount, recordSize, nodeByteSize } = reader.metadata
  const pointers = new Set<number>()
  for (let node = 0; node < nodeCount; node++) {
    const off = node * nodeByteSize
    let left: number
    let right: number
    if (recordSize === 24) {
      left = db.readUIntBE(off, 3)
      right = db.readUIntBE(off + 3, 3)
    } else if (recordSize === 28) {
      left = ((db[off + 3]! & 0xf0) << 20) | db.readUIntBE(off, 3)
      right = ((db[off + 3]! & 0x0f) << 24) | db.readUIntBE(off + 4, 3)
    } else if (recordSize === 32) {
      left = db.readUInt32BE(off)
      right = db.readUInt32BE(off + 4)
    } else throw new Error(`unsupported mmdb record size ${recordSize}`)
    if (left > nodeCount) pointers.add(left)
    if (right > nodeCount) pointers.add(right)
  }
  return [...pointers].map((p) => internal.resolveDataPointer(p))
}

function _build(reader: Reader<any>): _Index {
  const byAsn = new Map<number, string>()
  for (const rec of _dataRecords(reader) as any[]) {
    const asn = rec?.autonomous_system_number
    if (!Number.isInteger(asn) || asn <= 0) continue
    const name = typeof rec.autonomous_system_organization === 'string' ? rec.autonomous_system_organization.trim() : ''
    // One number may carry several records; the first name that says something wins.
    if (!byAsn.get(asn)) byAsn.set(asn, name)
  }
  const entries = [...byAsn].map(([asn, name]) => ({ asn, name, key: _fold(name) }))
  entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.asn - b.asn))
  return { reader, byAsn, entries }
}

/** The index of the AS database as it is on disk now; null without one. */
function _current(): _Index | null {
  const reader = openGeoReader('asn')
  if (!reader) return (_index = null)
  if (_index?.reader !== reader) _index = _build(reader)
  return _index
}

const _NO_DATABASE =
  'The AS number database (asn.mmdb) is not loaded, so networks cannot be named: download it under Settings, Geolocation. Numbers typed directly still work.'

/** GET /api/geoip/asns: search by `q`, or name the numbers of `asn`. */
export const asnSearchQuery = z.strictObject({
  q: safeText(100, { min: 1 }).describe('A few letters of a network name, or its number (3320 or AS3320)').optional(),
  asn: z
    .string()
    .regex(/^\s*(?:AS)?\d{1,10}\s*(?:,\s*(?:AS)?\d{1,10}\s*)*$/i, 'must be AS numbers separated by commas, such as 3320,24940')
    .describe('AS numbers to name, comma separated (at most 200)')
    .optional(),
  limit: z.coerce.number().int('must be an integer').min(1, 'must be at least 1').max(100, 'must be at most 100').default(20),
})
export type AsnSearchQuery = z.infer<typeof asnSearchQuery>

export const asnSearchResult = z.strictObject({
  networks: z.array(z.strictObject({ asn: z.number().int(), name: z.union([z.string(), z.null()]) })),
  database: z.strictObject({ loaded: z.boolean(), version: z.union([z.string(), z.null()]) }),
  note: z.union([z.string(), z.null()]),
})

export function searchAsns(query: AsnSearchQuery): z.infer<typeof asnSearchResult> {
  if (query.q === undefined && query.asn === undefined)
    throw badRequest('q: type a few letters of a network name or its number, or give asn: numbers to name (such as 3320,24940)')
  let numbers: number[] = []
  if (query.asn !== undefined) {
    numbers = [...new Set(query.asn.split(',').map((s) => Number(s.trim().replace(/^AS/i, ''))))]
    const bad = numbers.find((n) => n < 1 || n > 4_294_967_295)
    if (bad !== undefined) throw badRequest(`asn: ${bad} is no AS number (1 to 4294967295)`)
    if (numbers.length > 200) throw badRequest('asn: at most 200 numbers at once')
  }
  const index = _current()
  const database = { loaded: !!index, version: index ? geoVersion(index.reader) : null }
  const note = index ? null : _NO_DATABASE
  // Naming given numbers: every number answers, null when the database does not know it.
  if (query.asn !== undefined) return { networks: numbers.map((asn) => ({ asn, name: index?.byAsn.get(asn) || null })), database, note }
  if (!index) return { networks: [], database, note }
  const text = query.q!.trim()
  const num = /^(?:as\s*)?(\d{1,10})$/i.exec(text)
  const out: AsnName[] = []
  const seen = new Set<number>()
  const push = (asn: number, name: string) => {
    if (out.length < query.limit && !seen.has(asn)) {
      seen.add(asn)
      out.push({ asn, name })
    }
  }
  if (num && index.byAsn.has(Number(num[1]))) push(Number(num[1]), index.byAsn.get(Number(num[1]))!)
  const key = _fold(text)
  if (key) {
    for (const e of index.entries) if (e.key.startsWith(key)) push(e.asn, e.name)
    for (const e of index.entries) if (out.length < query.limit && e.key.includes(key)) push(e.asn, e.name)
  }
  return { networks: out.map((n) => ({ asn: n.asn, name: n.name || null })), database, note }
}
