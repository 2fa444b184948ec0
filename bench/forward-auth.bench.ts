import autocannon from 'autocannon'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startPanel, type PanelHandle } from '../tests/support/panel'
import { reportFigures } from './report'

// Budget (design.md): /auth/forward with a valid cached session >= 10,000 req/s, p99 <= 5 ms.
let panel: PanelHandle
beforeAll(async () => { panel = await startPanel() })
afterAll(async () => { await panel?.stop() })

function run(cookie: string, durationSeconds: number, connections: number) {
  return autocannon({
    url: `${panel.url}/auth/forward`, connections, pipelining: 1, duration: durationSeconds,
    headers: { cookie }, expectBody: '',
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
    figures.push(
      { what: `requests per second (${connections} connections)`, value: Math.round(r.requests.average), unit: 'req/s', budget: '>= 10000', withinBudget: r.requests.average >= 10_000 },
      { what: `p99 latency (${connections} connections)`, value: r.latency.p99, unit: 'ms', budget: '<= 5', withinBudget: r.latency.p99 <= 5 },
      { what: `p50 latency (${connections} connections)`, value: r.latency.p50, unit: 'ms', budget: '-', withinBudget: true },
    )
  }
  reportFigures('forward-auth', figures)
})
