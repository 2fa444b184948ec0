import { request } from 'node:http'
import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../tests/support/crowdsec'
import { makeTempDir } from '../tests/support/processes'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { startTestUpstream } from '../tests/support/upstream'
import { reportFigures, type Figure } from './report'

// The real edge: the production Caddy (bouncer, WAF) fed by the whole engine.
// Latency with the bouncer and the WAF on against off, in the same run; how long
// a ban takes to be enforced; what a configuration push does to enforcement.
// Banned sources are other loopback addresses (127.0.0.2+), so no namespace is needed.

const POLL_SECONDS = 1
let cs: CrowdsecHandle
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
let groupId: number

beforeAll(async () => {
  up = await startTestUpstream()
  const logDir = makeTempDir('bench-edge-logs-')
  cs = await startCrowdsec({ logDir })
  stack = await startProxyStack({ logDir, env: panelEnvFor(cs) })
  await stack.panel.request('/api/settings', {
    method: 'PUT',
    cookie: stack.admin,
    body: { 'security_engine.ticker_interval': `${POLL_SECONDS}s` },
  })
  groupId = (await createGroup(stack, { name: 'bench', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const hosts = [
    { domain: 'plain.bench.test', bouncer_enabled: false },
    { domain: 'bouncer.bench.test', bouncer_enabled: true },
    { domain: 'waf.bench.test', bouncer_enabled: true, waf_enabled: true, waf_mode: 'blocking' },
  ]
  for (const h of hosts) expect((await createHost(stack, { target_group_id: groupId, ...h })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await cs?.stop()
  await up?.stop()
})

function statusFrom(localAddress: string, host: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: stack.httpPort,
        path: '/',
        localAddress,
        agent: false,
        headers: { host, connection: 'close' },
        timeout: 5_000,
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      },
    )
    req.on('error', () => resolve(0))
    req.on('timeout', () => req.destroy())
    req.end()
  })
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!
}

it('request latency through the production Caddy: plain, bouncer, bouncer + WAF', async () => {
  const figures: Figure[] = []
  const results: Record<string, Awaited<ReturnType<typeof autocannon>>> = {}
  for (const host of ['plain', 'bouncer', 'waf']) {
    const opts = { url: `http://127.0.0.1:${stack.httpPort}/`, connections: 16, headers: { host: `${host}.bench.test` } }
    await autocannon({ ...opts, duration: 1 }) // warm-up
    results[host] = await autocannon({ ...opts, duration: 5 })
    expect(results[host]!.non2xx).toBe(0)
  }
  for (const [host, r] of Object.entries(results)) {
    figures.push(
      {
        what: `GET ${host}: requests per second (16 connections)`,
        value: Math.round(r.requests.average),
        unit: 'req/s',
        budget: '-',
        withinBudget: true,
      },
      { what: `GET ${host}: p50 latency`, value: r.latency.p50, unit: 'ms', budget: '-', withinBudget: true },
      { what: `GET ${host}: p99 latency`, value: r.latency.p99, unit: 'ms', budget: '-', withinBudget: true },
    )
  }
  const ratio = (a: string) => Math.round((results[a]!.requests.average / results.plain!.requests.average) * 100) / 100
  figures.push(
    { what: 'bouncer throughput / plain (same run)', value: ratio('bouncer'), unit: 'x', budget: '-', withinBudget: true },
    { what: 'bouncer + WAF throughput / plain (same run)', value: ratio('waf'), unit: 'x', budget: '-', withinBudget: true },
  )
  reportFigures('edge-latency', figures)
})

it('ban to 403, and what a configuration push does to a ban', async () => {
  const delays: number[] = []
  for (let i = 0; i < 5; i++) {
    const source = `127.0.0.${10 + i}`
    expect(await statusFrom(source, 'bouncer.bench.test')).toBe(200)
    const t0 = performance.now()
    await postDecisions(cs, [{ value: source }])
    while ((await statusFrom(source, 'bouncer.bench.test')) !== 403) await new Promise((r) => setTimeout(r, 10))
    delays.push(performance.now() - t0)
  }
  // A banned source probes while 10 host changes are pushed: an answer from the upstream (200) is a
  // pass; a connection the reload reset (no answer) is counted apart, it lets nothing through.
  const banned = '127.0.0.10'
  let probing = true,
    probes = 0,
    passed = 0,
    reset = 0,
    gapStart = 0,
    worstGap = 0
  const prober = (async () => {
    while (probing) {
      const status = await statusFrom(banned, 'bouncer.bench.test')
      probes++
      const now = performance.now()
      if (status === 0) reset++
      else if (status !== 403) {
        passed++
        gapStart ||= now
        worstGap = Math.max(worstGap, now - gapStart)
      } else gapStart = 0
    }
  })()
  const pushStart = performance.now()
  for (let i = 0; i < 10; i++) {
    const res = await createHost(stack, { domain: `push-${i}.bench.test`, target_group_id: groupId })
    expect(res.status).toBe(201)
  }
  const pushMs = performance.now() - pushStart
  await new Promise((r) => setTimeout(r, (POLL_SECONDS + 1) * 1000))
  probing = false
  await prober
  reportFigures('edge-enforcement', [
    {
      what: `ban -> 403, median of 5 (poll ${POLL_SECONDS} s)`,
      value: Math.round(quantile(delays, 0.5)),
      unit: 'ms',
      budget: `<= ${(POLL_SECONDS + 1) * 1000}`,
      withinBudget: quantile(delays, 0.5) <= (POLL_SECONDS + 1) * 1000,
    },
    {
      what: `ban -> 403, worst of 5 (poll ${POLL_SECONDS} s)`,
      value: Math.round(Math.max(...delays)),
      unit: 'ms',
      budget: `<= ${(POLL_SECONDS + 1) * 1000}`,
      withinBudget: Math.max(...delays) <= (POLL_SECONDS + 1) * 1000,
    },
    {
      what: `10 host pushes (${Math.round(pushMs)} ms): banned probes let through`,
      value: passed,
      unit: `of ${probes}`,
      budget: '0',
      withinBudget: passed === 0,
    },
    {
      what: '10 host pushes: longest push-to-enforcement gap',
      value: Math.round(worstGap),
      unit: 'ms',
      budget: '0',
      withinBudget: worstGap === 0 && passed === 0,
    },
    {
      what: '10 host pushes: banned probes reset by a reload (no answer)',
      value: reset,
      unit: `of ${probes}`,
      budget: '-',
      withinBudget: true,
    },
  ])
})
