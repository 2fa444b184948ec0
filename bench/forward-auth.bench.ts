import { spawn, spawnSync } from 'node:child_process'
import { availableParallelism } from 'node:os'
import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startPanel, type PanelHandle } from '../tests/support/panel'
import { median, ratioOf, reportFigures } from './report'

// Budget (design.md): /auth/forward with a valid cached session >= 10,000 req/s, p99 <= 5 ms.
// The limit, in the same run: a bare node:http server answering 200 with an empty body, in
// its own process like the panel, loaded by the same generator with the same connections.
const PAIRS = 3
let panel: PanelHandle
let bare: Awaited<ReturnType<typeof startBareServer>>
beforeAll(async () => {
  panel = await startPanel()
  bare = await startBareServer()
})
afterAll(async () => {
  await panel?.stop()
  await bare?.stop()
})

/** The bare server runs in a process of its own (not the load generator's), as the panel does. */
async function startBareServer() {
  const code =
    "require('node:http').createServer((q, s) => { s.statusCode = 200; s.end() }).listen(0, '127.0.0.1', function () { console.log(this.address().port) })"
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<number>((resolve) => child.stdout!.once('data', (b) => resolve(Number(String(b).trim()))))
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM')
    },
  }
}

function run(cookie: string, durationSeconds: number, connections: number, base = panel.url) {
  return autocannon({
    url: `${base}/auth/forward`,
    connections,
    pipelining: 1,
    duration: durationSeconds,
    headers: { cookie },
    expectBody: '',
  })
}

it('/auth/forward with a cached session', async () => {
  const cookie = await panel.login()
  await run(cookie, 1, 10) // warm-up: fills the session cache and the JIT
  const figures = []
  // The load generator shares the machine's two cores with the panel.
  for (const connections of [10, 32]) {
    // The bare server's own throughput swings by a fifth from one run to the next on a shared
    // machine: three alternated pairs of 3 s, and the ratio of the medians.
    const panelRuns: Array<Awaited<ReturnType<typeof run>>> = []
    const bareRuns: number[] = []
    for (let pair = 0; pair < PAIRS; pair++) {
      const r = await run(cookie, 3, connections)
      expect(r.non2xx).toBe(0)
      panelRuns.push(r)
      const limit = await run(cookie, 3, connections, bare.url)
      expect(limit.non2xx).toBe(0)
      bareRuns.push(limit.requests.average)
    }
    const rps = median(panelRuns.map((r) => r.requests.average))
    const bareRps = median(bareRuns)
    const r = panelRuns.find((x) => x.requests.average === rps)!
    figures.push(
      {
        what: `requests per second (${connections} connections, median of ${PAIRS})`,
        value: Math.round(rps),
        unit: 'req/s',
        budget: '>= 10000',
        withinBudget: rps >= 10_000,
        ratio: ratioOf(rps, bareRps, `bare node:http ${Math.round(bareRps)} req/s (median, alternated)`, '>= 0.7'),
      },
      {
        what: `p99 latency (${connections} connections)`,
        value: r.latency.p99,
        unit: 'ms',
        budget: '<= 5',
        withinBudget: r.latency.p99 <= 5,
      },
      { what: `p50 latency (${connections} connections)`, value: r.latency.p50, unit: 'ms', budget: '-', withinBudget: true },
    )
  }
  figures.push(...(await pinnedFigures(cookie)))
  reportFigures('forward-auth', figures)
})

/**
 * The same comparison with the load generator pinned to CPU 0 and the server under test to the
 * others (util-linux taskset). Unpinned, the generator saturates its core first and the ratio
 * mostly measures how long the answer takes it to parse; pinned, the server's core is the one
 * that saturates, so the ratio is the panel's own cost per check against the bare server's,
 * and it varies far less from run to run (docs/performance.md, 2026-11-28).
 */
async function pinnedFigures(cookie: string) {
  const cpus = availableParallelism()
  if (cpus < 2 || !_pin(process.pid, '0')) return []
  const serverCpus = cpus === 2 ? '1' : `1-${cpus - 1}`
  try {
    if (!_pin(panel.pid, serverCpus) || !_pin(bare.pid, serverCpus)) return []
    const panelRuns: number[] = []
    const bareRuns: number[] = []
    for (let pair = 0; pair < PAIRS; pair++) {
      const r = await run(cookie, 3, 10)
      expect(r.non2xx).toBe(0)
      panelRuns.push(r.requests.average)
      bareRuns.push((await run(cookie, 3, 10, bare.url)).requests.average)
    }
    const rps = median(panelRuns)
    const bareRps = median(bareRuns)
    return [
      {
        what: `requests per second, pinned (server CPU ${serverCpus}, generator CPU 0, 10 connections)`,
        value: Math.round(rps),
        unit: 'req/s',
        budget: '>= 10000',
        withinBudget: rps >= 10_000,
        ratio: ratioOf(rps, bareRps, `bare node:http pinned alike ${Math.round(bareRps)} req/s`, '>= 0.7'),
      },
    ]
  } finally {
    _pin(process.pid, `0-${cpus - 1}`)
  }
}

/** Sets the CPUs of every thread of a process; false where taskset is missing or refuses. */
function _pin(pid: number, cpus: string): boolean {
  return spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' }).status === 0
}
