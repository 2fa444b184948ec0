import { mkdirSync, writeFileSync } from 'node:fs'
import { BlockList, isIP } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { accessLists, hosts, rules, sessions, users } from '../../db/schema'
import { getClient, getDb } from '../../server/utils/core/db'
import { COUNTRIES_WITH_CONTINENT, continentOf } from '../../server/utils/access/continents'
import { countryBanPreview, evaluatePolicy, previewBody, previewPolicy, type PreviewAnswer } from '../../server/utils/access/replay'
import { geoPolicySchema, isCountryCode, type GeoPolicy } from '../../server/utils/access/schemas'
import { useMigratedDatabase } from '../support/migrated-db'
import { writeMmdb } from '../support/mmdb-writer'

// The replay of a geo policy (docs/access-control.md, "Try before it applies"): its semantics case
// by case, then an oracle: random access rows and random policies (seeded), the API's answer equal
// to a brute-force count over the same rows with an evaluator written here from the docs alone.

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0)
const DAY = 86_400_000

// The world of the fixture databases: each block one country and one AS (as ingestion records them).
const BLOCKS = [
  { cidr: '203.0.113.0/24', base: '203.0.113.', country: 'FR', asn: 64500, org: 'Example Net FR' },
  { cidr: '198.51.100.0/24', base: '198.51.100.', country: 'DE', asn: 64501, org: 'Beispiel DE' },
  { cidr: '192.0.2.0/24', base: '192.0.2.', country: 'US', asn: 64502, org: 'Example US' },
  { cidr: '100.64.0.0/24', base: '100.64.0.', country: 'CN', asn: 64503, org: 'Example CN' },
  { cidr: '2001:db8:1::/48', base: '2001:db8:1::', country: 'JP', asn: 64504, org: 'Example JP' },
  { cidr: '2001:db8:2::/48', base: '2001:db8:2::', country: 'BR', asn: null, org: null },
  { cidr: '233.252.0.0/24', base: '233.252.0.', country: null, asn: 64505, org: 'Unplaced AS' },
  { cidr: '10.1.0.0/24', base: '10.1.0.', country: 'LAN', asn: null, org: null },
  { cidr: '192.168.7.0/24', base: '192.168.7.', country: 'LAN', asn: null, org: null },
] as const
const CONTINENT: Record<string, string> = { FR: 'EU', DE: 'EU', BE: 'EU', US: 'NA', CN: 'AS', JP: 'AS', BR: 'SA' }

useMigratedDatabase('access-replay-', async () => {
  const dir = join(process.env.PANEL_DATA_DIR ?? '', 'geoip')
  mkdirSync(dir, { recursive: true })
  const placed = BLOCKS.filter((b) => b.country && b.country !== 'LAN')
  writeFileSync(join(dir, 'country.mmdb'), writeMmdb(placed.map((b) => [b.cidr, { country: { iso_code: b.country! } }])))
  const withAs = BLOCKS.filter((b) => b.asn !== null)
  writeFileSync(
    join(dir, 'asn.mmdb'),
    writeMmdb(
      withAs.map((b) => [b.cidr, { autonomous_system_number: b.asn!, autonomous_system_organization: b.org! }]),
      'Test-ASN',
    ),
  )
})
// Before the database opens: the geo readers read the data folder from the configuration.
process.env.PANEL_DATA_DIR = `${process.env.TMPDIR ?? '/tmp'}/access-replay-data-${process.pid}`
process.env.PANEL_MASTER_KEY ??= 'master-key-for-the-access-replay-test-0123456789'

/** mulberry32: the same rows and policies on every run. */
function seeded(seed: number) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!
  const some = <T>(xs: readonly T[], max: number): T[] => [...new Set(Array.from({ length: int(max + 1) }, () => pick(xs)))]
  return { next, int, pick, some }
}

interface Row {
  ts: number
  source: string
  host: number | null
  rule: number | null
  ip: string | null
  country: string | null
  asn: number | null
  path: string | null
}

// ---- the brute force, from docs/access-control.md alone ----

function bruteVerdict(p: GeoPolicy, r: Row, lists: Map<number, string[]>): 'allow' | 'deny' {
  const placed = r.country !== null && r.country !== 'LAN'
  const inAny = (cidrs: string[]) => {
    if (!r.ip) return false
    const b = new BlockList()
    for (const c of cidrs) {
      const [a, bits] = c.split('/')
      const fam = isIP(a!) === 6 ? 'ipv6' : 'ipv4'
      b.addSubnet(a!, bits === undefined ? (fam === 'ipv6' ? 128 : 32) : Number(bits), fam)
    }
    return b.check(r.ip, isIP(r.ip) === 6 ? 'ipv6' : 'ipv4')
  }
  for (const rule of p.rules) {
    const cidrs = [...rule.cidrs, ...(rule.access_list_id !== null ? lists.get(rule.access_list_id)! : [])]
    if (inAny(cidrs)) return rule.action
    if (placed && rule.countries.includes(r.country!)) return rule.action
    if (placed && (rule.continents as string[]).includes(CONTINENT[r.country!]!)) return rule.action
    if (r.asn !== null && rule.asns.includes(r.asn)) return rule.action
  }
  if (!placed && p.unknown_address !== 'allow_lan') return p.unknown_address
  if (!placed && r.ip && (r.ip.startsWith('10.') || r.ip.startsWith('192.168.') || r.ip === '127.0.0.1')) return 'allow'
  return p.default
}

function bruteTop<K extends string | number>(m: Map<K, number>): Array<[K, number]> {
  return [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10)
}

function brute(rows: Row[], p: GeoPolicy, lists: Map<number, string[]>, q: { host: number | null; rule: number | null; days: number }) {
  const since = NOW - q.days * DAY
  const inScope = rows.filter(
    (r) => r.source === 'caddy_access' && r.ts >= since && (q.host === null || r.host === q.host) && (q.rule === null || r.rule === q.rule),
  )
  const refused = inScope.filter((r) => bruteVerdict(p, r, lists) === 'deny')
  const count = <K>(xs: Row[], key: (r: Row) => K | null) => {
    const m = new Map<K, number>()
    for (const r of xs) {
      const k = key(r)
      if (k !== null) m.set(k, (m.get(k) ?? 0) + 1)
    }
    return m
  }
  const orgOf = new Map<number | null, string | null>(BLOCKS.map((b) => [b.asn, b.org]))
  return {
    requests: inScope.length,
    refused_requests: refused.length,
    refused_addresses: new Set(refused.flatMap((r) => (r.ip ? [r.ip] : []))).size,
    unknown_requests: inScope.filter((r) => r.country === null || r.country === 'LAN').length,
    top_countries: bruteTop(count(refused, (r) => (r.country === 'LAN' ? null : r.country))).map(([country, n]) => ({
      country,
      name: new Intl.DisplayNames(['en'], { type: 'region' }).of(country),
      requests: n,
    })),
    top_networks: bruteTop(count(refused, (r) => r.asn)).map(([asn, n]) => ({ asn, name: orgOf.get(asn) ?? null, requests: n })),
    top_paths: bruteTop(count(refused, (r) => r.path)).map(([path, n]) => ({ path, requests: n })),
  }
}

// ---- fixtures ----

async function seedWorld(rng: ReturnType<typeof seeded>) {
  const now = new Date(NOW).toISOString()
  const host = (domain: string) =>
    getDb()
      .insert(hosts)
      .values({
        domain,
        aliases: [],
        tlsMode: 'none',
        tlsChallenge: 'http',
        wafFamilies: [],
        customHandlers: [],
        headerRules: [],
        createdAt: now,
        updatedAt: now,
      } as any)
      .returning({ id: hosts.id })
      .get()
  const h1 = (await host('one.example.test'))!.id
  const h2 = (await host('two.example.test'))!.id
  const r1 = (await getDb()
    .insert(rules)
    .values({ hostId: h1, path: '/admin/*', methods: [], action: 'respond', headerRules: [], createdAt: now, updatedAt: now } as any)
    .returning({ id: rules.id })
    .get())!.id
  const list = (await getDb()
    .insert(accessLists)
    .values({
      name: 'office',
      ipRules: [
        { action: 'allow', source: '198.51.100.0/26' },
        { action: 'deny', source: '2001:db8:1::/64' },
      ],
      users: [],
      createdAt: now,
      updatedAt: now,
    })
    .returning({ id: accessLists.id })
    .get())!.id
  const addresses = BLOCKS.flatMap((b) =>
    Array.from({ length: 12 }, (_, i) => ({ b, ip: `${b.base}${b.base.includes(':') ? (i * 7).toString(16) : i * 5 + 1}` })),
  )
  const paths = Array.from({ length: 25 }, (_, i) => `/p${i}`)
  const rows: Row[] = []
  for (let i = 0; i < 4000; i++) {
    const a = rng.pick(addresses)
    // A few rows without an address, a few of FR's moved to BE by a database refresh.
    const noAddress = rng.next() < 0.02
    const moved = a.b.country === 'FR' && rng.next() < 0.2
    rows.push({
      ts: NOW - Math.floor(rng.next() * 12 * DAY),
      source: rng.next() < 0.9 ? 'caddy_access' : rng.pick(['caddy_error', 'waf_audit']),
      host: rng.pick([h1, h1, h2, null]),
      rule: null,
      ip: noAddress ? null : a.ip,
      country: noAddress ? null : moved ? 'BE' : a.b.country,
      asn: noAddress ? null : a.b.asn,
      path: rng.next() < 0.03 ? null : paths[Math.floor(rng.next() ** 2 * paths.length)]!,
    })
    const last = rows[rows.length - 1]!
    if (last.host === h1 && rng.next() < 0.3) last.rule = r1
  }
  const cols = 'ts_ms, source, host_id, rule_id, remote_ip, country, asn, path, level'
  const stmts = []
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200)
    stmts.push({
      sql: `INSERT INTO logs (${cols}) VALUES ${chunk.map(() => '(?,?,?,?,?,?,?,?,?)').join(',')}`,
      args: chunk.flatMap((r) => [r.ts, r.source, r.host, r.rule, r.ip, r.country, r.asn, r.path, 'info']),
    })
  }
  await getClient().batch(stmts, 'write')
  return { h1, h2, r1, list, rows, lists: new Map([[list, ['198.51.100.0/26', '2001:db8:1::/64']]]) }
}

function randomPolicy(rng: ReturnType<typeof seeded>, listId: number): GeoPolicy {
  const rulesOut = Array.from({ length: 1 + rng.int(4) }, () => {
    const r: Record<string, unknown> = {
      action: rng.pick(['allow', 'deny']),
      countries: rng.some(['FR', 'DE', 'BE', 'US', 'CN', 'JP', 'BR'], 2),
      continents: rng.some(['EU', 'NA', 'AS', 'SA', 'OC'], 1),
      asns: rng.some([64500, 64501, 64502, 64503, 64504, 64505], 2),
      cidrs: rng.some(['203.0.113.0/28', '192.0.2.21', '10.1.0.0/16', '2001:db8:2::/64', '233.252.0.0/25', '100.64.0.0/26'], 2),
      access_list_id: rng.next() < 0.2 ? listId : null,
    }
    if (!(r.countries as string[]).length && !(r.asns as number[]).length) r.countries = [rng.pick(['FR', 'US'])]
    return r
  })
  return geoPolicySchema.parse({
    rules: rulesOut,
    default: rng.pick(['allow', 'deny']),
    unknown_address: rng.pick(['allow_lan', 'allow', 'deny']),
  })
}

const caller = { userId: 1, currentIp: null }
const strip = ({ days: _d, since: _s, lockout: _l, ...counts }: PreviewAnswer) => counts

describe('the policy, case by case (docs/access-control.md, "Geo and network rules")', () => {
  const p = (x: unknown) => geoPolicySchema.parse(x)
  const fr = { ip: '203.0.113.9', country: 'FR', asn: 64500 }
  it('the first matching rule decides; no match gives the default', () => {
    const policy = p({
      rules: [
        { action: 'allow', countries: ['FR'] },
        { action: 'deny', asns: [64500] },
      ],
      default: 'deny',
    })
    expect(evaluatePolicy(policy, fr)).toBe('allow')
    expect(evaluatePolicy(policy, { ...fr, country: 'DE' })).toBe('deny')
    expect(evaluatePolicy(p({ rules: [{ action: 'deny', asns: [1] }], default: 'allow' }), fr)).toBe('allow')
  })
  it('continents come from the country', () => {
    expect(evaluatePolicy(p({ rules: [{ action: 'deny', continents: ['EU'] }], default: 'allow' }), fr)).toBe('deny')
    expect(evaluatePolicy(p({ rules: [{ action: 'deny', continents: ['EU'] }], default: 'allow' }), { ...fr, country: 'TR' })).toBe('allow')
  })
  it('address rules match every client, IPv4-mapped addresses as IPv4; access lists by their IP rules', () => {
    const policy = p({
      rules: [
        { action: 'deny', cidrs: ['203.0.113.0/28'] },
        { action: 'allow', access_list_id: 3 },
      ],
      default: 'deny',
    })
    const lists = new Map([[3, [{ family: 4 as const, start: 0xc0000200n, prefix: 24 }]]])
    expect(evaluatePolicy(policy, { ...fr, country: null }, lists)).toBe('deny')
    expect(evaluatePolicy(policy, { ip: '::ffff:203.0.113.9', country: 'FR', asn: null }, lists)).toBe('deny')
    expect(evaluatePolicy(policy, { ip: '192.0.2.77', country: null, asn: null }, lists)).toBe('allow')
  })
  it('an unplaced address: its address and AS rules first, then unknown_address (allow_lan: LAN in, the rest the default)', () => {
    const base = { rules: [{ action: 'allow', countries: ['FR'], asns: [64505] }], default: 'deny' }
    const unplaced = { ip: '233.252.0.1', country: null, asn: 64506 }
    const lan = { ip: '10.1.0.2', country: 'LAN', asn: null }
    expect(evaluatePolicy(p(base), { ...unplaced, asn: 64505 })).toBe('allow') // the AS database knows it
    expect(evaluatePolicy(p(base), unplaced)).toBe('deny')
    expect(evaluatePolicy(p(base), lan)).toBe('allow')
    expect(evaluatePolicy(p({ ...base, unknown_address: 'deny' }), lan)).toBe('deny')
    expect(evaluatePolicy(p({ ...base, unknown_address: 'allow' }), unplaced)).toBe('allow')
    expect(evaluatePolicy(p({ ...base, rules: [{ action: 'deny', cidrs: ['10.0.0.0/8'] }], unknown_address: 'allow' }), lan)).toBe('deny')
    expect(evaluatePolicy(p({ ...base, default: 'allow', unknown_address: 'allow_lan' }), unplaced)).toBe('allow')
  })
  it('every country code the schema accepts has a continent', () => {
    const accepted: string[] = []
    for (let a = 65; a < 91; a++)
      for (let b = 65; b < 91; b++) if (isCountryCode(String.fromCharCode(a, b))) accepted.push(String.fromCharCode(a, b))
    expect([...COUNTRIES_WITH_CONTINENT].sort()).toEqual(accepted)
    expect([continentOf('TR'), continentOf('RU'), continentOf('EG'), continentOf('AQ'), continentOf('LAN')]).toEqual([
      'AS',
      'EU',
      'AF',
      'AN',
      null,
    ])
  })
})

describe('the replay against stored rows (real libSQL file, every migration)', () => {
  it('equals a brute-force count over the same rows for random policies and scopes', async () => {
    const rng = seeded(38)
    const w = await seedWorld(rng)
    for (let i = 0; i < 40; i++) {
      const policy = randomPolicy(rng, w.list)
      const scope = rng.pick([
        { host: null, rule: null },
        { host: w.h1, rule: null },
        { host: w.h2, rule: null },
        { host: w.h1, rule: w.r1 },
        { host: null, rule: w.r1 },
      ])
      const days = rng.pick([1, 3, 7, 30])
      const body = previewBody.parse({ policy, host_id: scope.host, rule_id: scope.rule, days })
      const got = await previewPolicy(body, caller, NOW)
      expect(strip(got), `policy ${JSON.stringify(policy)} scope ${JSON.stringify(scope)} days ${days}`).toEqual(
        brute(w.rows, policy, w.lists, { ...scope, days }),
      )
      expect(got.since).toBe(new Date(NOW - days * DAY).toISOString())
    }
    // A policy that refuses nothing, and one that refuses everything.
    const none = await previewPolicy(previewBody.parse({ policy: { default: 'allow', unknown_address: 'allow' } }), caller, NOW)
    expect(strip(none)).toEqual(
      brute(w.rows, geoPolicySchema.parse({ default: 'allow', unknown_address: 'allow' }), w.lists, { host: null, rule: null, days: 7 }),
    )
    expect(none.refused_requests).toBe(0)
    const all = geoPolicySchema.parse({ default: 'deny', unknown_address: 'deny' })
    const every = await previewPolicy(previewBody.parse({ policy: all, days: 90 }), caller, NOW)
    expect(every.refused_requests).toBe(every.requests)
    expect(strip(every)).toEqual(brute(w.rows, all, w.lists, { host: null, rule: null, days: 90 }))

    // A country ban's preview: deny the country, allow the rest, every host.
    const ban = await countryBanPreview('fr', 7, caller, NOW)
    const banPolicy = geoPolicySchema.parse({ rules: [{ action: 'deny', countries: ['FR'] }], default: 'allow' })
    expect(strip(ban)).toEqual(brute(w.rows, banPolicy, w.lists, { host: null, rule: null, days: 7 }))
    expect(ban.top_countries).toEqual([expect.objectContaining({ country: 'FR', name: 'France' })])
    expect(ban.top_networks[0]).toMatchObject({ asn: 64500, name: 'Example Net FR' })
  })

  it('names what to fix: a missing host, path rule or access list, a path rule of another host, a country that does not exist', async () => {
    const policy = { rules: [{ action: 'deny', access_list_id: 999 }], default: 'allow' }
    const err = async (body: unknown) =>
      previewPolicy(previewBody.parse(body), caller, NOW).then(
        () => null,
        (e) => [e.statusCode, e.message],
      )
    expect(await err({ policy })).toEqual([400, 'policy.rules[0].access_list_id: access list 999 does not exist'])
    expect(await err({ policy: { default: 'deny' }, host_id: 999 })).toEqual([400, 'host_id: host 999 does not exist'])
    expect(await err({ policy: { default: 'deny' }, rule_id: 999 })).toEqual([400, 'rule_id: path rule 999 does not exist'])
    const [h2] = (await getClient().execute("SELECT id FROM hosts WHERE domain = 'two.example.test'")).rows
    const [r1] = (await getClient().execute('SELECT id, host_id FROM rules')).rows
    expect(await err({ policy: { default: 'deny' }, host_id: h2!.id, rule_id: r1!.id })).toEqual([
      400,
      `rule_id: path rule ${r1!.id} belongs to host ${r1!.host_id}, not to host ${h2!.id}`,
    ])
    expect(previewBody.safeParse({ policy: { default: 'deny' }, days: 91 }).success).toBe(false)
    await expect(countryBanPreview('zz', 7, caller, NOW)).rejects.toMatchObject({ statusCode: 404 })
    await expect(countryBanPreview('f1', 7, caller, NOW)).rejects.toMatchObject({ statusCode: 400 })
  })

  it('your addresses: this request and your sessions in the window, judged by the databases now', async () => {
    const now = new Date(NOW).toISOString()
    const u = (await getDb()
      .insert(users)
      .values({ email: 'me@example.test', name: 'Me', role: 'admin', createdAt: now, updatedAt: now } as any)
      .returning({ id: users.id })
      .get())!.id
    const session = (ip: string, seen: number) =>
      getDb()
        .insert(sessions)
        .values({ tokenHash: `h-${ip}-${seen}`, userId: u, createdAtMs: seen, expiresAtMs: NOW + DAY, lastSeenAtMs: seen, remoteIp: ip })
    await session('198.51.100.20', NOW - DAY)
    await session('192.168.7.3', NOW - 2 * DAY)
    await session('192.0.2.50', NOW - 20 * DAY) // outside a 7-day window
    const other = (await getDb()
      .insert(users)
      .values({ email: 'other@example.test', name: 'Other', role: 'admin', createdAt: now, updatedAt: now } as any)
      .returning({ id: users.id })
      .get())!.id
    await getDb()
      .insert(sessions)
      .values({ tokenHash: 'other', userId: other, createdAtMs: NOW, expiresAtMs: NOW + DAY, lastSeenAtMs: NOW, remoteIp: '100.64.0.9' })
    const me = { userId: u, currentIp: '203.0.113.7' }
    const denyFr = await previewPolicy(
      previewBody.parse({ policy: { rules: [{ action: 'deny', countries: ['FR'] }], default: 'allow' } }),
      me,
      NOW,
    )
    expect(denyFr.lockout).toEqual({
      would_lock_you_out: true,
      your_addresses: [
        { ip: '203.0.113.7', refused: true },
        { ip: '198.51.100.20', refused: false },
        { ip: '192.168.7.3', refused: false },
      ],
    })
    const onlyDe = await previewPolicy(
      previewBody.parse({ policy: { rules: [{ action: 'allow', asns: [64501] }], default: 'deny' } }),
      me,
      NOW,
    )
    expect(onlyDe.lockout.your_addresses).toEqual([
      { ip: '203.0.113.7', refused: true },
      { ip: '198.51.100.20', refused: false },
      { ip: '192.168.7.3', refused: false }, // LAN: allow_lan
    ])
    const safe = await previewPolicy(
      previewBody.parse({ policy: { rules: [{ action: 'deny', countries: ['CN'] }], default: 'allow' } }),
      me,
      NOW,
    )
    expect(safe.lockout.would_lock_you_out).toBe(false)
  })
})
