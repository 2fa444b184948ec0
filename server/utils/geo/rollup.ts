import { bitsOf, endOf, formatNet, parseCidr, sizeOf, type Family, type Net } from './ip'

// Country networks -> supernets (spec behaviour 2). First an exact merge
// (contained and adjacent networks, no address added), then, while there are
// more than the target, the cheapest merges of neighbouring networks into their
// common supernet, where cheapest = fewest addresses added outside the inputs.
// Limits: never wider than /16 (IPv4) or /28 (IPv6) (wider inputs are split,
// exact merges stop there too), and never a supernet whose
// added (foreign) addresses exceed MAX_FOREIGN_SHARE (half) of its size. A country that
// cannot get under the target within those limits keeps more supernets.

export const TARGET_SUPERNETS = 200
export const FLOOR = { 4: 16, 6: 28 } as const
/** At most this share of a supernet may lie outside the country. */
export const MAX_FOREIGN_SHARE = 0.5

export interface RollUpResult {
  cidrs: string[]
  inputAddresses: { v4: bigint; v6: bigint }
  addedAddresses: { v4: bigint; v6: bigint }
}

/**
 * Networks wider than the floor as floor-sized pieces: a country database holds
 * some (a /15, a /12), and a committed supernet may never be wider than the floor.
 */
export function splitToFloor(nets: Net[]): Net[] {
  const out: Net[] = []
  for (const n of nets) {
    const floor = FLOOR[n.family]
    if (n.prefix >= floor) {
      out.push(n)
      continue
    }
    const step = sizeOf({ family: n.family, start: 0n, prefix: floor })
    for (let start = n.start; start <= endOf(n); start += step) out.push({ family: n.family, start, prefix: floor })
  }
  return out
}

// The merge works on plain numbers: BigInt arithmetic made the most
// fragmented country's roll-up cost over 2 s. No supernet is wider than the
// floor, so a network is its floor-sized block (the top FLOOR bits, a number)
// and its offset inside the block, counted in units of its family's longest
// prefix (an IPv6 /64 is one unit). Offsets, sizes and costs stay exact
// while that span is at most 52 bits (IPv6 networks up to /80; the bundled
// data goes to /64). Longer IPv6 networks are not merged but committed as
// they are, unless a supernet already covers them.
const _MAX_SPAN_BITS = 52

interface _Geometry {
  family: Family
  /** The prefix of one unit: offsets and sizes count networks of this length. */
  unitPrefix: number
  /** Units per network, by prefix. */
  units: number[]
}

function _geometry(family: Family, nets: Net[]): _Geometry {
  const floor = FLOOR[family]
  let longest: number = floor
  for (const n of nets) if (n.prefix > longest && n.prefix - floor <= _MAX_SPAN_BITS) longest = n.prefix
  return { family, unitPrefix: longest, units: Array.from({ length: longest + 1 }, (_, p) => (p < floor ? 0 : 2 ** (longest - p))) }
}

interface _Node {
  block: number
  offset: number
  prefix: number
  /** Country units inside it. */
  covered: number
  prev: _Node | null
  next: _Node | null
  alive: boolean
}
interface _Candidate {
  a: _Node
  b: _Node
  cost: number
  order: number
}
const _lastUnit = (g: _Geometry, n: { offset: number; prefix: number }) => n.offset + g.units[n.prefix]! - 1

function _toNode(g: _Geometry, n: Net): _Node {
  const bits = bitsOf(g.family)
  const offsetBits = BigInt(bits - FLOOR[g.family])
  const offset = Number((n.start & ((1n << offsetBits) - 1n)) >> BigInt(bits - g.unitPrefix))
  return {
    block: Number(n.start >> offsetBits),
    offset,
    prefix: n.prefix,
    covered: g.units[n.prefix]!,
    prev: null,
    next: null,
    alive: true,
  }
}

function _toNet(g: _Geometry, n: { block: number; offset: number; prefix: number }): Net {
  const bits = bitsOf(g.family)
  return {
    family: g.family,
    start: (BigInt(n.block) << BigInt(bits - FLOOR[g.family])) | (BigInt(n.offset) << BigInt(bits - g.unitPrefix)),
    prefix: n.prefix,
  }
}

/** Contained networks dropped and sibling pairs collapsed upwards, never wider than the floor: no address added. */
function _exactMerge(g: _Geometry, nets: Net[]): _Node[] {
  const sorted = nets.map((n) => _toNode(g, n)).sort((a, b) => a.block - b.block || a.offset - b.offset || a.prefix - b.prefix)
  const floor = FLOOR[g.family]
  const out: _Node[] = []
  for (const n of sorted) {
    const last = out.at(-1)
    if (last && last.block === n.block && n.offset <= _lastUnit(g, last)) continue // contained
    out.push(n)
    // [a/p, b/p] with a aligned to /p-1 -> a/p-1.
    while (out.length >= 2) {
      const b = out[out.length - 1]!,
        a = out[out.length - 2]!
      if (a.prefix !== b.prefix || a.prefix <= floor || a.block !== b.block) break
      const size = g.units[a.prefix]!
      if (a.offset % (2 * size) !== 0 || a.offset + size !== b.offset) break
      out.splice(-2, 2, { ...a, prefix: a.prefix - 1, covered: 2 * size })
    }
  }
  return out
}

/** The highest bit in which two offsets (below 2^52) differ, counted from the lowest (-1 when equal). */
function _highestDifferingBit(x: number, y: number): number {
  const hx = Math.floor(x / 2 ** 32),
    hy = Math.floor(y / 2 ** 32)
  if (hx !== hy) return 63 - Math.clz32(hx ^ hy)
  const low = (x ^ y) >>> 0
  return low === 0 ? -1 : 31 - Math.clz32(low)
}

/** The smallest network containing both, inside their block (null if they lie in different blocks). */
function _commonSupernet(g: _Geometry, a: _Node, b: _Node): { offset: number; prefix: number } | null {
  if (a.block !== b.block) return null
  const shared = g.unitPrefix - 1 - _highestDifferingBit(a.offset, b.offset)
  const prefix = Math.min(a.prefix, b.prefix, shared)
  return { offset: a.offset - (a.offset % g.units[prefix]!), prefix }
}

/** A binary min-heap of merge candidates, cheapest first (ties: leftmost first, for determinism). */
class _Heap {
  private items: _Candidate[] = []
  get size() {
    return this.items.length
  }
  private less(x: _Candidate, y: _Candidate) {
    return x.cost < y.cost || (x.cost === y.cost && x.order < y.order)
  }
  // Sifts move a hole instead of swapping pairs.
  push(c: _Candidate) {
    const a = this.items
    let i = a.length
    a.push(c)
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!this.less(c, a[p]!)) break
      a[i] = a[p]!
      i = p
    }
    a[i] = c
  }
  pop(): _Candidate | undefined {
    const a = this.items
    const top = a[0]
    const last = a.pop()
    if (!a.length || !last) return top
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      if (l >= a.length) break
      const m = l + 1 < a.length && this.less(a[l + 1]!, a[l]!) ? l + 1 : l
      if (!this.less(a[m]!, last)) break
      a[i] = a[m]!
      i = m
    }
    a[i] = last
    return top
  }
}

/** What merging a and its neighbour b would produce: the supernet, the nodes it swallows, the cost (foreign units). */
function _candidate(g: _Geometry, a: _Node, b: _Node, maxForeignShare: number) {
  const sup = _commonSupernet(g, a, b)
  if (!sup) return null
  const supLast = _lastUnit(g, sup)
  let first = a,
    last = b,
    covered = a.covered + b.covered
  while (first.prev && first.prev.block === a.block && first.prev.offset >= sup.offset) {
    first = first.prev
    covered += first.covered
  }
  while (last.next && last.next.block === a.block && _lastUnit(g, last.next) <= supLast) {
    last = last.next
    covered += last.covered
  }
  const size = g.units[sup.prefix]!
  const cost = size - covered
  if (cost > maxForeignShare * size) return null
  return { sup, first, last, covered, cost }
}

function _rollFamily(family: Family, nets: Net[], target: number, maxForeignShare: number): { nets: Net[]; input: bigint; added: bigint } {
  const floored = splitToFloor(nets)
  const g = _geometry(family, floored)
  const tooLong = floored.filter((n) => n.prefix > g.unitPrefix)
  const merged = _exactMerge(
    g,
    floored.filter((n) => n.prefix <= g.unitPrefix),
  )
  merged.forEach((n, i) => {
    n.prev = merged[i - 1] ?? null
    n.next = merged[i + 1] ?? null
  })
  let head: _Node | null = merged[0] ?? null
  let count = merged.length + tooLong.length
  const heap = new _Heap()
  let order = 0
  const offer = (a: _Node | null) => {
    if (!a?.next) return
    const c = _candidate(g, a, a.next, maxForeignShare)
    if (c) heap.push({ a, b: a.next, cost: c.cost, order: order++ })
  }
  for (const n of merged) offer(n)
  while (count > target && heap.size) {
    const top = heap.pop()!
    if (!top.a.alive || !top.b.alive || top.a.next !== top.b) continue // stale
    const c = _candidate(g, top.a, top.b, maxForeignShare)
    if (!c || c.cost !== top.cost) {
      if (c) heap.push({ ...top, cost: c.cost, order: order++ })
      continue
    }
    const node: _Node = { block: top.a.block, ...c.sup, covered: c.covered, prev: c.first.prev, next: c.last.next, alive: true }
    for (let n: _Node | null = c.first; n && n !== c.last.next; n = n.next) {
      n.alive = false
      count--
    }
    count++
    if (node.prev) node.prev.next = node
    else head = node
    if (node.next) node.next.prev = node
    offer(node.prev)
    offer(node)
  }
  const out: Net[] = []
  for (let n: _Node | null = head; n; n = n.next) out.push(_toNet(g, n))
  const longOutsideCountry = tooLong.length
    ? _outside(
        tooLong,
        merged.map((n) => _toNet(g, n)),
      )
    : []
  const input = _unitsToAddresses(g, merged) + longOutsideCountry.reduce((s, n) => s + sizeOf(n), 0n)
  out.push(..._outside(longOutsideCountry, out))
  const total = out.reduce((s, n) => s + sizeOf(n), 0n)
  return { nets: out, input, added: total - input }
}

/** The addresses of disjoint nodes in address order: summed per block as numbers (exact within a block), then as BigInt. */
function _unitsToAddresses(g: _Geometry, nodes: _Node[]): bigint {
  const unitBits = BigInt(bitsOf(g.family) - g.unitPrefix)
  let total = 0n,
    block = -1,
    units = 0
  for (const n of nodes) {
    if (n.block !== block) {
      total += BigInt(units) << unitBits
      block = n.block
      units = 0
    }
    units += n.covered
  }
  return total + (BigInt(units) << unitBits)
}

/**
 * Of networks longer than every cover network, those inside no cover network
 * and no other of them. `cover` is sorted and disjoint: a network longer
 * than all of them lies inside one or outside all.
 */
function _outside(nets: Net[], cover: Net[]): Net[] {
  const kept: Net[] = []
  for (const n of [...nets].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.prefix - b.prefix))) {
    const last = kept.at(-1)
    if (last && n.start <= endOf(last)) continue
    let lo = 0,
      hi = cover.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (cover[mid]!.start <= n.start) lo = mid
      else hi = mid - 1
    }
    const c = cover[lo]
    if (c && c.start <= n.start && n.start <= endOf(c)) continue
    kept.push(n)
  }
  return kept
}

/** Rolls networks (CIDR text) up; see rollUpNets. */
export function rollUpNetworks(cidrs: string[], target = TARGET_SUPERNETS, maxForeignShare = MAX_FOREIGN_SHARE): RollUpResult {
  return rollUpNets(cidrs.map(parseCidr), target, maxForeignShare)
}

/** Rolls networks up; the IPv4 and IPv6 shares of the target follow their network counts. */
export function rollUpNets(nets: Net[], target = TARGET_SUPERNETS, maxForeignShare = MAX_FOREIGN_SHARE): RollUpResult {
  const byFamily = (f: Family) => nets.filter((n) => n.family === f)
  const v4 = byFamily(4),
    v6 = byFamily(6)
  const t4 = v6.length ? Math.max(1, Math.round((target * v4.length) / (v4.length + v6.length))) : target
  const r4 = _rollFamily(4, v4, t4, maxForeignShare)
  const r6 = _rollFamily(6, v6, Math.max(1, target - t4), maxForeignShare)
  return {
    cidrs: [...r4.nets, ...r6.nets].map(formatNet),
    inputAddresses: { v4: r4.input, v6: r6.input },
    addedAddresses: { v4: r4.added, v6: r6.added },
  }
}
