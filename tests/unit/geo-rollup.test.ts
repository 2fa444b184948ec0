import { describe, expect, it } from 'vitest'
import { Reader } from 'maxmind'
import { endOf, parseCidr, sizeOf, ipToBigInt, bigIntToIp, isLanAddress, subtractNetworks } from '../../server/utils/geo/ip'
import { FLOOR, MAX_FOREIGN_SHARE, rollUpNetworks } from '../../server/utils/geo/rollup'
import { countryOfRecord, listCountryNetworks, walkMmdb } from '../../server/utils/geo/walker'
import { writeMmdb } from '../support/mmdb-writer'

/** A deterministic pseudo-random generator so property cases are reproducible. */
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed / 2 ** 31
  }
}

function randomNetworks(seed: number, count: number): string[] {
  const r = rng(seed)
  const out: string[] = []
  for (let i = 0; i < count; i++) {
    const prefix = 18 + Math.floor(r() * 10)
    const a = 1 + Math.floor(r() * 200),
      b = Math.floor(r() * 4),
      c = Math.floor(r() * 256)
    out.push(`${bigIntToIp(parseCidr(`${a}.${b}.${c}.0/${prefix}`).start, 4)}/${prefix}`)
    if (r() < 0.3) out.push(`2001:db8:${Math.floor(r() * 4096).toString(16)}::/${40 + Math.floor(r() * 20)}`)
  }
  return out
}

const covers = (nets: ReturnType<typeof parseCidr>[], n: ReturnType<typeof parseCidr>) =>
  nets.some((s) => s.family === n.family && s.start <= n.start && endOf(n) <= endOf(s))

describe('rollUpNetworks — properties over random country-like inputs', () => {
  it.each([1, 2, 3, 4, 5, 6])(
    'seed %i: covers every input, respects the floor and the foreign-share rule, adds only what it reports',
    (seed) => {
      const input = randomNetworks(seed, 900)
      const res = rollUpNetworks(input)
      const out = res.cidrs.map(parseCidr)
      for (const n of input.map(parseCidr)) expect(covers(out, n)).toBe(true)
      for (const s of out) expect(s.prefix).toBeGreaterThanOrEqual(FLOOR[s.family])
      // Output networks are disjoint, and each is mostly country addresses.
      const sorted = [...out].sort((a, b) => (a.start < b.start ? -1 : 1))
      for (let i = 1; i < sorted.length; i++)
        if (sorted[i]!.family === sorted[i - 1]!.family) expect(sorted[i]!.start > endOf(sorted[i - 1]!)).toBe(true)
      const inputNets = input.map(parseCidr)
      for (const s of out) {
        const inside = rollUpNetworks(
          inputNets.filter((n) => covers([s], n)).map((n) => `${bigIntToIp(n.start, n.family)}/${n.prefix}`),
          1e9,
        )
        const countryAddresses = inside.inputAddresses.v4 + inside.inputAddresses.v6
        expect(Number(sizeOf(s) - countryAddresses)).toBeLessThanOrEqual(MAX_FOREIGN_SHARE * Number(sizeOf(s)))
      }
      const total = out.reduce((sum, n) => sum + sizeOf(n), 0n)
      expect(total).toBe(res.inputAddresses.v4 + res.inputAddresses.v6 + res.addedAddresses.v4 + res.addedAddresses.v6)
    },
  )

  it('merges adjacent and contained networks exactly, adding nothing', () => {
    const res = rollUpNetworks(['10.0.0.0/25', '10.0.0.128/25', '10.0.1.0/24', '10.0.0.64/26'], 1000)
    expect(res.cidrs).toEqual(['10.0.0.0/23'])
    expect(res.addedAddresses.v4).toBe(0n)
  })

  it('reaches the target when the networks sit close together', () => {
    const input = Array.from({ length: 1000 }, (_, i) => `10.${Math.floor(i / 128)}.${(i % 128) * 2}.0/24`)
    const res = rollUpNetworks(input, 200)
    expect(res.cidrs.length).toBeLessThanOrEqual(200)
    expect(res.addedAddresses.v4).toBeLessThanOrEqual(res.inputAddresses.v4)
  })

  // Regression (issue: "a country ban committed a /15"): inputs wider than the
  // floor were kept whole, and exact merges of sibling /16s went on upwards.
  it.each([
    { input: ['10.0.0.0/15'], expected: ['10.0.0.0/16', '10.1.0.0/16'] },
    { input: ['10.0.0.0/16', '10.1.0.0/16'], expected: ['10.0.0.0/16', '10.1.0.0/16'] },
    { input: ['10.0.0.0/14', '10.2.5.0/24'], expected: ['10.0.0.0/16', '10.1.0.0/16', '10.2.0.0/16', '10.3.0.0/16'] },
    { input: ['2001:da0::/27'], expected: ['2001:da0::/28', '2001:db0::/28'] },
  ])('splits $input at the floor and never merges above it', ({ input, expected }) => {
    for (const target of [1, 200]) {
      const res = rollUpNetworks(input, target)
      expect(res.cidrs).toEqual(expected)
      expect(res.addedAddresses.v4 + res.addedAddresses.v6).toBe(0n)
    }
  })

  it.each([7, 8, 9, 10])('seed %i with wide and sibling inputs: nothing wider than the floor, every input address covered', (seed) => {
    const r = rng(seed)
    const input: string[] = []
    for (let i = 0; i < 150; i++) {
      const a = 1 + Math.floor(r() * 200),
        b = Math.floor(r() * 256)
      const prefix = 11 + Math.floor(r() * 14) // /11 to /24: many wider than the floor
      input.push(`${bigIntToIp(parseCidr(`${a}.${b}.0.0/${prefix}`).start, 4)}/${prefix}`)
      if (r() < 0.3) {
        const p6 = 23 + Math.floor(r() * 17)
        input.push(`${bigIntToIp(parseCidr(`2001:${Math.floor(r() * 65536).toString(16)}::/${p6}`).start, 6)}/${p6}`)
      }
    }
    for (const target of [1, 200]) {
      const res = rollUpNetworks(input, target)
      const out = res.cidrs.map(parseCidr)
      for (const s of out) expect(s.prefix, `${bigIntToIp(s.start, s.family)}/${s.prefix}`).toBeGreaterThanOrEqual(FLOOR[s.family])
      for (const n of input.map(parseCidr)) {
        // Every address of the input, piece by floor-sized piece.
        const step = sizeOf({ family: n.family, start: 0n, prefix: Math.max(n.prefix, FLOOR[n.family]) })
        for (let start = n.start; start <= endOf(n); start += step)
          expect(covers(out, { family: n.family, start, prefix: Math.max(n.prefix, FLOOR[n.family]) })).toBe(true)
      }
      const total = out.reduce((sum, n) => sum + sizeOf(n), 0n)
      expect(total).toBe(res.inputAddresses.v4 + res.inputAddresses.v6 + res.addedAddresses.v4 + res.addedAddresses.v6)
    }
  })

  // The merge counts IPv6 in /64 units (the bundled data's longest networks);
  // a network longer than /80 would not fit a number's 52 bits below the floor.
  it('commits IPv6 networks longer than /80 as they are, unless a kept network or supernet covers them', () => {
    const input = ['2001:db8::/64', '2001:db8::1/128', '2001:db8:0:1::/96', '2001:db8:0:1::/96', '2001:db8:0:2::/64']
    const exact = rollUpNetworks(input, 1000)
    expect(exact.cidrs).toEqual(['2001:db8::/64', '2001:db8:0:2::/64', '2001:db8:0:1::/96'])
    expect(exact.inputAddresses.v6).toBe(2n * 2n ** 64n + 2n ** 32n)
    expect(exact.addedAddresses.v6).toBe(0n)
    const merged = rollUpNetworks(input, 1)
    expect(merged.cidrs).toEqual(['2001:db8::/62'])
    expect(merged.inputAddresses.v6).toBe(exact.inputAddresses.v6)
    expect(merged.addedAddresses.v6).toBe(4n * 2n ** 64n - exact.inputAddresses.v6)
  })

  it('never goes wider than /16 even when asked for one supernet', () => {
    const res = rollUpNetworks(['10.0.0.0/24', '10.1.0.0/24', '10.0.128.0/24'], 1)
    expect(res.cidrs.every((c) => Number(c.split('/')[1]) >= 16)).toBe(true)
    expect(res.cidrs.length).toBeGreaterThanOrEqual(2)
  })
})

describe('walkMmdb — every stored network of a database written here', () => {
  const db = new Reader<any>(
    writeMmdb([
      ['0.0.0.0/1', { country: { iso_code: 'US' } }],
      ['81.2.69.0/24', { country: { iso_code: 'GB' } }],
      ['81.2.70.0/23', { country: { iso_code: 'GB' } }],
      ['2a01:e00::/26', { country_code: 'FR' }],
      ['5.0.0.0/16', { country_code: 'FR' }],
    ]),
  )
  it("lists a country's IPv4 and IPv6 networks in both record shapes", () => {
    expect(listCountryNetworks(db, 'GB').sort()).toEqual(['81.2.69.0/24', '81.2.70.0/23'])
    expect(listCountryNetworks(db, 'FR').sort()).toEqual(['2a01:e00::/26', '5.0.0.0/16'])
    expect(listCountryNetworks(db, 'DE')).toEqual([])
  })
  it('the expansion walk lists exactly what the generic walk finds, in address order', () => {
    for (const cc of ['US', 'GB', 'FR']) {
      const generic = [...walkMmdb<any>(db)].filter((n) => countryOfRecord(n.data) === cc).map((n) => n.cidr)
      expect(listCountryNetworks(db, cc)).toEqual(generic)
    }
  })
  it('agrees with point lookups', () => {
    for (const n of walkMmdb<any>(db)) {
      const first = bigIntToIp(parseCidr(n.cidr).start, n.family)
      expect(db.getWithPrefixLength(first)[1]).toBe(Number(n.cidr.split('/')[1]))
    }
  })
})

describe('ip helpers', () => {
  it.each(['127.0.0.1', '10.1.2.3', '172.31.255.255', '192.168.0.1', '::1', 'fd00::1', '::ffff:10.0.0.1'])('%s is LAN', (ip) =>
    expect(isLanAddress(ip)).toBe(true),
  )
  it.each(['8.8.8.8', '172.32.0.1', '2001:db8::1', '198.51.100.7'])('%s is not LAN', (ip) => expect(isLanAddress(ip)).toBe(false))
  it('round-trips IPv6 text', () => {
    for (const ip of ['2001:db8::1', '::', '::1', '2a01:e00::', 'fe80::1:2:3:4']) expect(bigIntToIp(ipToBigInt(ip).value, 6)).toBe(ip)
  })
})

describe('subtractNetworks — a country range split around whitelisted sources', () => {
  const text = (nets: ReturnType<typeof parseCidr>[]) => nets.map((n) => `${bigIntToIp(n.start, n.family)}/${n.prefix}`)
  it.each([
    {
      net: '10.0.0.0/24',
      holes: ['10.0.0.5'],
      expected: [
        '10.0.0.0/30',
        '10.0.0.4/32',
        '10.0.0.6/31',
        '10.0.0.8/29',
        '10.0.0.16/28',
        '10.0.0.32/27',
        '10.0.0.64/26',
        '10.0.0.128/25',
      ],
    },
    { net: '10.0.0.0/24', holes: ['10.0.0.128/25'], expected: ['10.0.0.0/25'] },
    { net: '10.0.0.0/24', holes: ['10.0.0.0/16'], expected: [] },
    { net: '10.0.0.0/24', holes: ['10.0.1.1', '2001:db8::1'], expected: ['10.0.0.0/24'] },
  ])('$net minus $holes', ({ net, holes, expected }) => {
    expect(text(subtractNetworks(parseCidr(net), holes.map(parseCidr)))).toEqual(expected)
  })

  it('covers exactly the addresses outside the holes', () => {
    const net = parseCidr('10.0.0.0/20'),
      holes = ['10.0.3.7', '10.0.8.0/26', '10.0.15.255'].map(parseCidr)
    const out = subtractNetworks(net, holes)
    const total = out.reduce((s, n) => s + sizeOf(n), 0n)
    expect(total).toBe(sizeOf(net) - 1n - 64n - 1n)
    for (const h of holes) expect(out.some((n) => n.start <= h.start && endOf(h) <= endOf(n))).toBe(false)
  })
})
