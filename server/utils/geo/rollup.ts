import { commonLeadingBits, endOf, formatNet, mask, parseCidr, sizeOf, type Family, type Net } from './ip'

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

function _exactMerge(nets: Net[]): Net[] {
  const sorted = splitToFloor(nets).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : a.prefix - b.prefix))
  const out: Net[] = []
  for (const n of sorted) {
    const last = out.at(-1)
    if (last && n.start <= endOf(last)) continue // contained
    out.push(n)
    // Collapse sibling pairs upwards: [a/p, b/p] with a aligned to /p-1 -> a/p-1.
    while (out.length >= 2) {
      const b = out[out.length - 1]!,
        a = out[out.length - 2]!
      // Exact, but never wider than the floor either.
      if (a.prefix !== b.prefix || a.prefix <= FLOOR[a.family]) break
      const parent = a.prefix - 1
      const bit = sizeOf(a)
      if ((a.start & bit) !== 0n || a.start + bit !== b.start) break
      out.splice(-2, 2, { family: a.family, start: a.start, prefix: parent })
    }
  }
  return out
}

/** The smallest network containing both (null if none at or above the floor). */
function _commonSupernet(a: Net, b: Net): Net | null {
  const p = Math.min(a.prefix, b.prefix, commonLeadingBits(a.start, b.start, a.family))
  if (p < FLOOR[a.family]) return null
  return { family: a.family, start: a.start & mask(a.family, p), prefix: p }
}

interface _Node {
  net: Net
  covered: bigint
  prev: _Node | null
  next: _Node | null
  alive: boolean
  id: number
}
interface _Candidate {
  a: _Node
  b: _Node
  cost: bigint
  order: number
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
  push(c: _Candidate) {
    const a = this.items
    a.push(c)
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1
      if (!this.less(a[i]!, a[p]!)) break
      ;[a[i], a[p]] = [a[p]!, a[i]!]
      i = p
    }
  }
  pop(): _Candidate | undefined {
    const a = this.items
    const top = a[0]
    const last = a.pop()
    if (a.length && last) {
      a[0] = last
      for (let i = 0; ; ) {
        const l = 2 * i + 1,
          r = l + 1
        let m = i
        if (l < a.length && this.less(a[l]!, a[m]!)) m = l
        if (r < a.length && this.less(a[r]!, a[m]!)) m = r
        if (m === i) break
        ;[a[i], a[m]] = [a[m]!, a[i]!]
        i = m
      }
    }
    return top
  }
}

/** What merging a and its neighbour b would produce: the supernet, the nodes it swallows, the cost. */
function _candidate(
  a: _Node,
  b: _Node,
  maxForeignShare: number,
): { sup: Net; first: _Node; last: _Node; covered: bigint; cost: bigint } | null {
  const sup = _commonSupernet(a.net, b.net)
  if (!sup) return null
  let first = a,
    last = b,
    covered = a.covered + b.covered
  while (first.prev && first.prev.net.start >= sup.start) {
    first = first.prev
    covered += first.covered
  }
  while (last.next && endOf(last.next.net) <= endOf(sup)) {
    last = last.next
    covered += last.covered
  }
  const cost = sizeOf(sup) - covered
  if (Number(cost) > maxForeignShare * Number(sizeOf(sup))) return null
  return { sup, first, last, covered, cost }
}

function _rollFamily(nets: Net[], target: number, maxForeignShare: number): { nets: Net[]; input: bigint; added: bigint } {
  const merged = _exactMerge(nets)
  const input = merged.reduce((s, n) => s + sizeOf(n), 0n)
  let ids = 0
  const nodes: _Node[] = merged.map((net) => ({ net, covered: sizeOf(net), prev: null, next: null, alive: true, id: ids++ }))
  nodes.forEach((n, i) => {
    n.prev = nodes[i - 1] ?? null
    n.next = nodes[i + 1] ?? null
  })
  let head: _Node | null = nodes[0] ?? null
  let count = nodes.length
  const heap = new _Heap()
  let order = 0
  const offer = (a: _Node | null) => {
    if (!a?.next) return
    const c = _candidate(a, a.next, maxForeignShare)
    if (c) heap.push({ a, b: a.next, cost: c.cost, order: order++ })
  }
  for (const n of nodes) offer(n)
  while (count > target && heap.size) {
    const top = heap.pop()!
    if (!top.a.alive || !top.b.alive || top.a.next !== top.b) continue // stale
    const c = _candidate(top.a, top.b, maxForeignShare)
    if (!c || c.cost !== top.cost) {
      if (c) heap.push({ ...top, cost: c.cost, order: order++ })
      continue
    }
    const node: _Node = { net: c.sup, covered: c.covered, prev: c.first.prev, next: c.last.next, alive: true, id: ids++ }
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
  for (let n: _Node | null = head; n; n = n.next) out.push(n.net)
  const total = out.reduce((s, n) => s + sizeOf(n), 0n)
  return { nets: out, input, added: total - input }
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
  const r4 = _rollFamily(v4, t4, maxForeignShare)
  const r6 = _rollFamily(v6, Math.max(1, target - t4), maxForeignShare)
  return {
    cidrs: [...r4.nets, ...r6.nets].map(formatNet),
    inputAddresses: { v4: r4.input, v6: r6.input },
    addedAddresses: { v4: r4.added, v6: r6.added },
  }
}
