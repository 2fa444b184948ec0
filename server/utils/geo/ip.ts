import { isIP } from 'node:net'

// IP arithmetic on BigInt, shared by the walker, the roll-up (which merges on plain numbers) and the LAN check.

export type Family = 4 | 6
export interface Net {
  family: Family
  start: bigint
  prefix: number
}

export const bitsOf = (f: Family) => (f === 4 ? 32 : 128)

export function ipToBigInt(ip: string): { family: Family; value: bigint } {
  const family = isIP(ip) as 0 | 4 | 6
  if (family === 4) return { family, value: ip.split('.').reduce((n, o) => (n << 8n) | BigInt(Number(o)), 0n) }
  if (family === 6) {
    let text = ip
    const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
    if (v4) {
      const n = ipToBigInt(v4[1]!).value
      text = text.replace(v4[1]!, `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`)
    }
    const [head, tail = ''] = text.split('::')
    const h = head ? head.split(':') : [],
      t = text.includes('::') ? (tail ? tail.split(':') : []) : []
    const groups = text.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h
    return { family, value: groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n) }
  }
  throw new Error(`not an IP address: ${ip}`)
}

export function bigIntToIp(value: bigint, family: Family): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => Number((value >> s) & 255n)).join('.')
  const g = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn))
  let best = -1,
    bestLen = 1
  for (let i = 0; i < 8; ) {
    let j = i
    while (j < 8 && g[j] === 0) j++
    if (j - i > bestLen) {
      best = i
      bestLen = j - i
    }
    i = j === i ? i + 1 : j
  }
  const hex = g.map((x) => x.toString(16))
  return best < 0 ? hex.join(':') : `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`
}

export function parseCidr(cidr: string): Net {
  const [ip, len] = cidr.split('/')
  const { family, value } = ipToBigInt(ip!)
  const prefix = len === undefined ? bitsOf(family) : Number(len)
  return { family, start: value & mask(family, prefix), prefix }
}

// Masks and sizes per family and prefix, computed once: the roll-up asks for them
// hundreds of thousands of times per country.
const _table = (bits: number, at: (p: number) => bigint) => Array.from({ length: bits + 1 }, (_, p) => at(p))
const _MASKS = {
  4: _table(32, (p) => ((1n << 32n) - 1n) ^ ((1n << BigInt(32 - p)) - 1n)),
  6: _table(128, (p) => ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - p)) - 1n)),
}
const _SIZES = { 4: _table(32, (p) => 1n << BigInt(32 - p)), 6: _table(128, (p) => 1n << BigInt(128 - p)) }

export const mask = (family: Family, prefix: number) => _MASKS[family][prefix]!
export const sizeOf = (n: Net) => _SIZES[n.family][n.prefix]!
export const endOf = (n: Net) => n.start + sizeOf(n) - 1n
export const formatNet = (n: Net) => `${bigIntToIp(n.start, n.family)}/${n.prefix}`

export function netContains(net: Net, family: Family, value: bigint): boolean {
  return net.family === family && value >= net.start && value <= endOf(net)
}

export const LAN_CIDRS = ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'].map(parseCidr)

export function isLanAddress(ip: string): boolean {
  const { family, value } = ipToBigInt(ip)
  if (family === 6 && value >> 32n === 0xffffn) return isLanAddress(bigIntToIp(value & 0xffffffffn, 4))
  return LAN_CIDRS.some((n) => netContains(n, family, value))
}

/**
 * `net` minus `holes`: the networks that cover exactly the addresses of `net`
 * outside every hole (a country range split around a whitelisted address).
 * Each hole inside `net` costs at most one network per prefix bit between them.
 */
export function subtractNetworks(net: Net, holes: Net[]): Net[] {
  const inside = holes.filter((h) => h.family === net.family && h.start <= endOf(net) && endOf(h) >= net.start)
  if (!inside.length) return [net]
  if (inside.some((h) => h.start <= net.start && endOf(h) >= endOf(net))) return []
  const half = sizeOf(net) / 2n
  const lower: Net = { family: net.family, start: net.start, prefix: net.prefix + 1 }
  const upper: Net = { family: net.family, start: net.start + half, prefix: net.prefix + 1 }
  return [...subtractNetworks(lower, inside), ...subtractNetworks(upper, inside)]
}
