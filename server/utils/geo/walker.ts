import type { Reader } from 'maxmind'
import { bigIntToIp } from './ip'

// Every network stored in an .mmdb search tree, with its record. maxmind only
// offers point lookups, so this walks the tree itself: each node holds two
// records (left = bit 0, right = bit 1); a record below nodeCount is a child
// node, equal to it is "no data", above it points into the data section.

export interface WalkedNetwork<T> { cidr: string; family: 4 | 6; data: T }

function _recordReader(db: Buffer, recordSize: number) {
  if (recordSize === 24) return (off: number, right: boolean) => db.readUIntBE(right ? off + 3 : off, 3)
  if (recordSize === 28) return (off: number, right: boolean) => right
    ? ((db[off + 3]! & 0x0f) << 24) | db.readUIntBE(off + 4, 3)
    : ((db[off + 3]! & 0xf0) << 20) | db.readUIntBE(off, 3)
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
      if (data === undefined) { data = internal.resolveDataPointer(-node) as T; cache.set(-node, data) }
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
  const out: string[] = []
  for (const n of walkMmdb<any>(reader)) if (countryOfRecord(n.data) === cc) out.push(n.cidr)
  return out
}
