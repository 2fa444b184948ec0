import type { Reader } from 'maxmind'
import { bigIntToIp, formatNet, type Net } from './ip'

// Every network stored in an .mmdb search tree, with its record. maxmind only
// offers point lookups, so this walks the tree itself: each node holds two
// records (left = bit 0, right = bit 1); a record below nodeCount is a child
// node, equal to it is "no data", above it points into the data section.

export interface WalkedNetwork<T> {
  cidr: string
  family: 4 | 6
  data: T
}

function _recordReader(db: Buffer, recordSize: number) {
  if (recordSize === 24) return (off: number, right: boolean) => db.readUIntBE(right ? off + 3 : off, 3)
  if (recordSize === 28)
    return (off: number, right: boolean) =>
      right ? ((db[off + 3]! & 0x0f) << 24) | db.readUIntBE(off + 4, 3) : ((db[off + 3]! & 0xf0) << 20) | db.readUIntBE(off, 3)
  if (recordSize === 32) return (off: number, right: boolean) => db.readUInt32BE(right ? off + 4 : off)
  throw new Error(`unsupported mmdb record size ${recordSize}`)
}

export function* walkMmdb<T>(reader: Reader<any>): Generator<WalkedNetwork<T>> {
  const internal = reader as any
  const db: Buffer = internal.db
  const { nodeCount, recordSize, nodeByteSize, ipVersion } = reader.metadata
  const read = _recordReader(db, recordSize)
  const width = ipVersion === 6 ? 128 : 32
  const ipv4Start: number = internal.ipv4StartNodeNumber
  const cache = new Map<number, T>()
  // [node or -pointer, depth, prefix bits]; right pushed first so output ascends.
  const stack: Array<[number, number, bigint]> = [[0, 0, 0n]]
  while (stack.length) {
    const [node, depth, prefix] = stack.pop()!
    if (node < 0) {
      let data = cache.get(-node)
      if (data === undefined) {
        data = internal.resolveDataPointer(-node) as T
        cache.set(-node, data)
      }
      const v4 = ipVersion === 4 || (depth >= 96 && prefix >> 32n === 0n)
      yield v4
        ? { cidr: `${bigIntToIp(prefix & 0xffffffffn, 4)}/${ipVersion === 4 ? depth : depth - 96}`, family: 4, data }
        : { cidr: `${bigIntToIp(prefix, 6)}/${depth}`, family: 6, data }
      continue
    }
    // IPv4 is reachable again under ::ffff:0:0/96 and 2002::/16: walk it once, under ::/96.
    if (ipVersion === 6 && node === ipv4Start && prefix !== 0n) continue
    const off = node * nodeByteSize
    for (const right of [true, false]) {
      const next = read(off, right)
      if (next === nodeCount) continue
      const d = depth + 1
      const bit = right ? 1n << BigInt(width - d) : 0n
      stack.push([next < nodeCount ? next : -next, d, prefix | bit])
    }
  }
}

/** The country code of a record, for MaxMind's shape and the ip-location-db shape. */
export function countryOfRecord(data: any): string | undefined {
  return data?.country?.iso_code ?? data?.country_code ?? data?.registered_country?.iso_code
}

export function listCountryNetworks(reader: Reader<any>, cc: string): string[] {
  return listCountryNets(reader, cc).map(formatNet)
}

/**
 * The networks of one country, in address order. Same walk as walkMmdb, but
 * built for the expansion's hot path: the country of each data record is
 * resolved once, and an address is only assembled (from the path's bits) for
 * a network of that country.
 */
export function listCountryNets(reader: Reader<any>, cc: string): Net[] {
  const internal = reader as any
  const db: Buffer = internal.db
  const { nodeCount, recordSize, nodeByteSize, ipVersion } = reader.metadata
  const read = _recordReader(db, recordSize)
  const ipv4Start: number = internal.ipv4StartNodeNumber
  const matches = new Map<number, boolean>()
  const path = new Uint8Array(129)
  const out: Net[] = []
  // Flat stack of (node or -pointer, depth, bit taken to get here); right pushed first so output ascends.
  const stack: number[] = [0, 0, 0]
  while (stack.length) {
    const bit = stack.pop()!,
      depth = stack.pop()!,
      node = stack.pop()!
    if (depth > 0) path[depth - 1] = bit
    if (node < 0) {
      let match = matches.get(-node)
      if (match === undefined) {
        match = countryOfRecord(internal.resolveDataPointer(-node)) === cc
        matches.set(-node, match)
      }
      if (match) out.push(_netFromPath(path, depth, ipVersion))
      continue
    }
    // IPv4 is reachable again under ::ffff:0:0/96 and 2002::/16: walk it once, under ::/96.
    if (ipVersion === 6 && node === ipv4Start && !_pathIsZero(path, depth)) continue
    const off = node * nodeByteSize
    for (const right of [true, false]) {
      const next = read(off, right)
      if (next === nodeCount) continue
      stack.push(next < nodeCount ? next : -next, depth + 1, right ? 1 : 0)
    }
  }
  return out
}

function _pathIsZero(path: Uint8Array, depth: number): boolean {
  for (let i = 0; i < depth; i++) if (path[i]) return false
  return true
}

function _netFromPath(path: Uint8Array, depth: number, ipVersion: number): Net {
  const v4Offset = ipVersion === 4 ? 0 : 96
  if (ipVersion === 4 || (depth >= 96 && _pathIsZero(path, 96))) {
    let start = 0
    for (let i = v4Offset; i < v4Offset + 32; i++) start = start * 2 + (i < depth ? path[i]! : 0)
    return { family: 4, start: BigInt(start), prefix: depth - v4Offset }
  }
  let hex = ''
  for (let i = 0; i < 128; i += 4) {
    let nibble = 0
    for (let j = i; j < i + 4; j++) nibble = nibble * 2 + (j < depth ? path[j]! : 0)
    hex += nibble.toString(16)
  }
  return { family: 6, start: BigInt(`0x${hex}`), prefix: depth }
}
