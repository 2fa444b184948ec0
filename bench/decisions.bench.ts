import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../tests/support/crowdsec'
import { startPanel, type PanelHandle } from '../tests/support/panel'
import { reportFigures } from './report'

// Budget (design.md): the decisions list with 50,000 active decisions <= 500 ms uncached.
let cs: CrowdsecHandle
let panel: PanelHandle
let cookie: string
const COUNT = 50_000

beforeAll(async () => {
  cs = await startCrowdsec()
  for (let chunk = 0; chunk < COUNT / 500; chunk++) {
    await postDecisions(cs, Array.from({ length: 500 }, (_, i) => {
      const n = chunk * 500 + i
      return { value: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`, scenario: `bench/s${n % 7}`, origin: n % 2 ? 'cscli' : 'crowdsec' }
    }))
  }
  panel = await startPanel({ env: panelEnvFor(cs) })
  cookie = await panel.login()
}, 600_000)
afterAll(async () => { await panel?.stop(); await cs?.stop() })

async function timed(path: string) {
  const t = performance.now()
  const res = await panel.request(path, { cookie })
  expect(res.status).toBe(200)
  return { ms: performance.now() - t, count: (res.json as unknown[]).length }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

it('lists 50,000 active decisions', async () => {
  const cold = await timed('/api/security/decisions')
  expect(cold.count).toBe(COUNT)
  const cached = await timed('/api/security/decisions')
  const filtered = await timed('/api/security/decisions?q=bench/s3&origin=cscli')
  // A warm process with an expired cache is the usual case: deleting one
  // decision through the panel empties the cache, then the list is timed.
  const ids = (await panel.request('/api/security/decisions', { cookie })).json as Array<{ id: number }>
  const uncached: number[] = [], lapiAlone: number[] = []
  for (let i = 0; i < 5; i++) {
    expect((await panel.request(`/api/security/decisions/${ids[i]!.id}`, { method: 'DELETE', cookie })).status).toBeLessThan(300)
    uncached.push((await timed('/api/security/decisions')).ms)
    const t = performance.now()
    const res = await fetch(`${cs.url}/v1/decisions`, { headers: { 'x-api-key': cs.bouncerKey } })
    await res.text()
    lapiAlone.push(performance.now() - t)
  }
  reportFigures('decisions', [
    { what: `list ${COUNT} decisions, uncached, warm process (median of 5)`, value: Math.round(median(uncached)), unit: 'ms', budget: '<= 500', withinBudget: median(uncached) <= 500 },
    { what: 'list, uncached, first request after start', value: Math.round(cold.ms), unit: 'ms', budget: '-', withinBudget: true },
    { what: 'the engine alone: GET /v1/decisions (median of 5)', value: Math.round(median(lapiAlone)), unit: 'ms', budget: '-', withinBudget: true },
    { what: 'list, cached (15 s)', value: Math.round(cached.ms), unit: 'ms', budget: '-', withinBudget: true },
    { what: `filtered q+origin (${filtered.count} rows), cached`, value: Math.round(filtered.ms), unit: 'ms', budget: '-', withinBudget: true },
  ])
})
