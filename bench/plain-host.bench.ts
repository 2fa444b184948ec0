import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { startTestUpstream } from '../tests/support/upstream'
import { ratioOf, reportFigures } from './report'

// Issue 40 item 3: the panel's plain host against a hand-written minimal reverse_proxy,
// in one process pair (the production Caddy and one upstream), alternated so both see
// the same machine load. The minimal route is added to the configuration the panel
// pushed (before its unknown-host route) and loaded straight into Caddy.

const ROUNDS = Number(process.env.BENCH_PLAIN_ROUNDS ?? 3)
const SECONDS = Number(process.env.BENCH_PLAIN_SECONDS ?? 3)
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
  const group = await createGroup(stack, { name: 'bench', targets: [{ address: `127.0.0.1:${up.port}` }] })
  expect((await createHost(stack, { domain: 'plain.bench.test', target_group_id: group.id, bouncer_enabled: false })).status).toBe(201)
  // The panel pushes after answering: wait for its host in Caddy.
  let config: any
  for (let i = 0; i < 100 && !JSON.stringify(config ?? null).includes('plain.bench.test'); i++) {
    if (i) await new Promise((r) => setTimeout(r, 100))
    config = await stack.caddy.getConfig()
  }
  const routes = config.apps.http.servers.http.routes as any[]
  const minimal = {
    match: [{ host: ['minimal.bench.test'] }],
    handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: `127.0.0.1:${up.port}` }] }],
    terminal: true,
  }
  routes.splice(routes.length - 1, 0, minimal)
  // The panel re-pushes its own configuration (dropping the minimal route): it is stopped, Caddy keeps running.
  await stack.panel.stop()
  const loaded = await stack.caddy.load(config)
  expect(loaded.status, loaded.body).toBe(200)
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

it("the panel's plain host against a minimal reverse_proxy, alternated in one Caddy", async () => {
  const sum: Record<string, number> = { plain: 0, minimal: 0 }
  const run = (host: string, duration: number) =>
    autocannon({ url: `http://127.0.0.1:${stack.httpPort}/`, connections: 16, duration, headers: { host: `${host}.bench.test` } })
  for (const host of ['plain', 'minimal']) await run(host, 1) // warm-up
  for (let i = 0; i < ROUNDS; i++)
    for (const host of i % 2 ? ['minimal', 'plain'] : ['plain', 'minimal']) {
      const r = await run(host, SECONDS)
      expect(r.non2xx, `${host}: ${JSON.stringify(r.statusCodeStats)}`).toBe(0)
      sum[host]! += r.requests.total
    }
  const rate = (host: string) => Math.round(sum[host]! / (ROUNDS * SECONDS))
  reportFigures('plain-host', [
    { what: 'GET minimal reverse_proxy: requests per second', value: rate('minimal'), unit: 'req/s', budget: '-', withinBudget: true },
    {
      what: "GET the panel's plain host: requests per second",
      value: rate('plain'),
      unit: 'req/s',
      budget: '-',
      withinBudget: true,
      ratio: ratioOf(rate('plain'), rate('minimal'), `minimal reverse_proxy, ${rate('minimal')} req/s`, '>= 0.9'),
    },
  ])
}, 300_000)
