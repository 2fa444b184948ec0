import { ipToBigInt } from '../../server/utils/geo/ip'

// A minimal MaxMind DB writer for test fixtures (no npm package writes .mmdb).
// Layout: a binary search tree of nodes (two 28-bit records each), 16 zero
// bytes, the data section, then the metadata marker and map. IPv4 lives under ::/96.

type Value = string | number | boolean | Value[] | { [k: string]: Value }
type Tree = { children: [Tree | Value | undefined, Tree | Value | undefined] }
const isTree = (x: unknown): x is Tree => !!x && typeof x === 'object' && 'children' in (x as object)

function control(type: number, size: number): Buffer {
  const extended = type > 7
  const first = (extended ? 0 : type) << 5
  let bytes: number[]
  if (size < 29) bytes = [first | size]
  else if (size < 285) bytes = [first | 29, size - 29]
  else if (size < 65821) {
    const s = size - 285
    bytes = [first | 30, s >> 8, s & 255]
  } else {
    const s = size - 65821
    bytes = [first | 31, (s >> 16) & 255, (s >> 8) & 255, s & 255]
  }
  if (extended) bytes.splice(1, 0, type - 7)
  return Buffer.from(bytes)
}

function unsigned(type: number, n: number | bigint): Buffer {
  let hex = BigInt(n).toString(16)
  if (hex === '0') hex = ''
  if (hex.length % 2) hex = `0${hex}`
  const b = Buffer.from(hex, 'hex')
  return Buffer.concat([control(type, b.length), b])
}

function encode(v: Value): Buffer {
  if (typeof v === 'string') {
    const b = Buffer.from(v)
    return Buffer.concat([control(2, b.length), b])
  }
  if (typeof v === 'boolean') return control(14, v ? 1 : 0)
  if (typeof v === 'number') return unsigned(v < 2 ** 32 ? 6 : 9, v)
  if (Array.isArray(v)) return Buffer.concat([control(11, v.length), ...v.map(encode)])
  const entries = Object.entries(v)
  return Buffer.concat([control(7, entries.length), ...entries.flatMap(([k, x]) => [encode(k), encode(x)])])
}

function pathBits(cidr: string): number[] {
  const [ip, len] = cidr.split('/')
  const { family, value } = ipToBigInt(ip!)
  const width = family === 4 ? 32 : 128
  const prefix = Number(len ?? width)
  const offset = family === 4 ? 96 : 0
  const bits: number[] = Array(offset).fill(0)
  for (let i = 0; i < prefix; i++) bits.push(Number((value >> BigInt(width - 1 - i)) & 1n))
  return bits
}

/** Entries are applied in order: put wider networks first, narrower ones after. */
/** `buildEpoch`: the database's build time in seconds (its version; the panel judges its age by it). */
export function writeMmdb(entries: Array<[string, Value]>, databaseType = 'Test-Country', opts: { buildEpoch?: number } = {}): Buffer {
  const root: Tree = { children: [undefined, undefined] }
  for (const [cidr, data] of entries) {
    const bits = pathBits(cidr)
    let node = root
    for (let i = 0; i < bits.length - 1; i++) {
      let child = node.children[bits[i]!]
      if (!isTree(child)) {
        child = { children: [child, child] }
        node.children[bits[i]!] = child
      }
      node = child
    }
    node.children[bits[bits.length - 1]!] = data
  }
  const nodes: Tree[] = []
  const ids = new Map<Tree, number>()
  for (const queue = [root]; queue.length; ) {
    const n = queue.shift()!
    ids.set(n, nodes.length)
    nodes.push(n)
    for (const c of n.children) if (isTree(c)) queue.push(c)
  }
  const nodeCount = nodes.length
  const chunks: Buffer[] = []
  const offsets = new Map<string, number>()
  let size = 0
  const pointer = (v: Value) => {
    const key = JSON.stringify(v)
    let off = offsets.get(key)
    if (off === undefined) {
      const b = encode(v)
      off = size
      offsets.set(key, off)
      chunks.push(b)
      size += b.length
    }
    return nodeCount + 16 + off
  }
  const record = (c: Tree | Value | undefined) => (c === undefined ? nodeCount : isTree(c) ? ids.get(c)! : pointer(c))
  const tree = Buffer.alloc(nodeCount * 7)
  nodes.forEach((n, i) => {
    const o = i * 7,
      l = record(n.children[0]),
      r = record(n.children[1])
    tree.writeUIntBE(l & 0xffffff, o, 3)
    tree[o + 3] = ((l >> 20) & 0xf0) | ((r >> 24) & 0x0f)
    tree.writeUIntBE(r & 0xffffff, o + 4, 3)
  })
  const meta = Buffer.concat([
    control(7, 9),
    encode('node_count'),
    unsigned(6, nodeCount),
    encode('record_size'),
    unsigned(5, 28),
    encode('ip_version'),
    unsigned(5, 6),
    encode('database_type'),
    encode(databaseType),
    encode('languages'),
    encode(['en']),
    encode('binary_format_major_version'),
    unsigned(5, 2),
    encode('binary_format_minor_version'),
    unsigned(5, 0),
    encode('build_epoch'),
    unsigned(9, opts.buildEpoch ?? 1_700_000_000),
    encode('description'),
    encode({ en: 'panel test fixture' }),
  ])
  return Buffer.concat([tree, Buffer.alloc(16), ...chunks, Buffer.from([0xab, 0xcd, 0xef]), Buffer.from('MaxMind.com'), meta])
}
