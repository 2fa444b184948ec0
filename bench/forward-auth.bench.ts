import { spawn } from 'node:child_process'
import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startPanel, type PanelHandle } from '../tests/support/panel'
import { ratioOf, reportFigures } from './report'

// Budget (design.md): /auth/forward with a valid cached session >= 10,000 req/s, p99 <= 5 ms.
// The limit, in the same run: a bare node:http server answering 200 with an empty body, in
// its own process like the panel, loaded by the same generator with the same connections.
let panel: PanelHandle
let bare: { url: string; stop: () => Promise<void> }
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
    const r = await run(cookie, 5, connections)
    expect(r.non2xx).toBe(0)
    const limit = await run(cookie, 5, connections, bare.url)
    expect(limit.non2xx).toBe(0)
    figures.push(
      {
        what: `requests per second (${connections} connections)`,
        value: Math.round(r.requests.average),
        unit: 'req/s',
        budget: '>= 10000',
        withinBudget: r.requests.average >= 10_000,
        ratio: ratioOf(r.requests.average, limit.requests.average, `bare node:http ${Math.round(limit.requests.average)} req/s`, '>= 0.7'),
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
  reportFigures('forward-auth', figures)
})
