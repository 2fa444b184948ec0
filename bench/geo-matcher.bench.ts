import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { writeMmdb } from '../tests/support/mmdb-writer'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { startTestUpstream } from '../tests/support/upstream'
import { median, ratioOf, reportFigures } from './report'

// The geo matcher's cost per request (docs/access-control.md, "Enforcement in the proxy"):
// the production Caddy, one host with a geo policy (an AS rule, then a country allow-list, so
// both databases are read on every request) against the same host without one, in the same run,
// alternated. Loopback is placed in FR on AS 64500 by the fixture databases; the requests pass.
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const dir = join(stack.panel.dataDir, 'geoip')
  mkdirSync(dir, { recursive: true })
  // A few thousand networks, so a lookup walks a tree of a realistic depth.
  const countries = ['DE', 'US', 'NL', 'GB', 'JP']
  const filler: Array<[string, any]> = []
  for (let a = 1; a < 224; a++)
    for (let b = 0; b < 256; b += 16)
      if (a !== 127) filler.push([`${a}.${b}.0.0/12`, { country: { iso_code: countries[(a + b) % 5]! }, continent: { code: 'EU' } }])
  writeFileSync(
    join(dir, 'country.mmdb'),
    writeMmdb([...filler, ['127.0.0.0/8', { country: { iso_code: 'FR' }, continent: { code: 'EU' } }]], 'Test-Country'),
  )
  writeFileSync(
    join(dir, 'asn.mmdb'),
    writeMmdb(
      [
        ...filler.map(([n], i) => [n, { autonomous_system_number: 1000 + i }] as [string, any]),
        ['127.0.0.0/8', { autonomous_system_number: 64500 }],
      ],
      'Test-ASN',
    ),
  )
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const geo_policy = {
    rules: [
      { action: 'deny', asns: [64501, 64502, 64503] },
      { action: 'allow', countries: ['FR', 'BE', 'LU'] },
    ],
    default: 'deny',
    unknown_address: 'deny',
  }
  expect((await createHost(stack, { domain: 'open.example.test', target_group_id: group.id, bouncer_enabled: false })).status).toBe(201)
  expect(
    (await createHost(stack, { domain: 'geo.example.test', target_group_id: group.id, bouncer_enabled: false, geo_policy })).status,
  ).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

function run(host: string, durationSeconds: number) {
  return autocannon({
    url: `http://127.0.0.1:${stack.httpPort}/`,
    connections: 10,
    pipelining: 1,
    duration: durationSeconds,
    headers: { host },
  })
}

it('requests per second through a geo policy vs the same host without one', async () => {
  await run('open.example.test', 1)
  await run('geo.example.test', 1)
  const open: number[] = []
  const geo: number[] = []
  for (let i = 0; i < 3; i++) {
    const o = await run('open.example.test', 5)
    const g = await run('geo.example.test', 5)
    expect(o.non2xx).toBe(0)
    expect(g.non2xx).toBe(0)
    open.push(o.requests.average)
    geo.push(g.requests.average)
  }
  reportFigures('geo-matcher', [
    {
      what: 'no geo policy (the limit), median of 3',
      value: Math.round(median(open)),
      unit: 'req/s',
      budget: 'reference',
      withinBudget: true,
    },
    {
      what: 'geo policy (AS rule + country allow-list, both databases read), median of 3',
      value: Math.round(median(geo)),
      unit: 'req/s',
      budget: '>= 0.95x the limit',
      withinBudget: median(geo) >= 0.95 * median(open),
      ratio: ratioOf(median(geo), median(open), 'no geo policy', '>= 0.95'),
    },
  ])
}, 180_000)
