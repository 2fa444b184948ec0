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

it('lists 50,000 active decisions', async () => {
  const uncached = await timed('/api/security/decisions')
  expect(uncached.count).toBe(COUNT)
  const cached = await timed('/api/security/decisions')
  const filtered = await timed('/api/security/decisions?q=bench/s3&origin=cscli')
  reportFigures('decisions', [
    { what: `list ${COUNT} decisions, uncached`, value: Math.round(uncached.ms), unit: 'ms', budget: '<= 500', withinBudget: uncached.ms <= 500 },
    { what: 'list, cached (15 s)', value: Math.round(cached.ms), unit: 'ms', budget: '-', withinBudget: true },
    { what: `filtered q+origin (${filtered.count} rows), cached`, value: Math.round(filtered.ms), unit: 'ms', budget: '-', withinBudget: true },
  ])
})
