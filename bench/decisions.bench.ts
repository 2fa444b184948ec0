import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { LAPI_USER_AGENT, panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../tests/support/crowdsec'
import { registerTestSecret, startPanel, type PanelHandle } from '../tests/support/panel'
import { median, ratioOf, reportFigures, type Figure } from './report'

// Budgets (design.md, issue 18): the decisions list with 50,000 active decisions <= 500 ms
// uncached; a page of it <= 20 ms with 50,000 (and 500,000: BENCH_DECISIONS=500000) active
// decisions; a ban in the list within the mirror's stream interval. The limit, in the same
// run: the local API's own answer to GET /v1/decisions (goal: the panel's uncached list
// takes no longer, ratio <= 1.0).
const COUNT = Number(process.env.BENCH_DECISIONS ?? 50_000)
const CHUNK = 5_000
const REPS = COUNT > 100_000 ? 3 : 5
/** design.md states the whole-list budget for 50,000 decisions only. */
const LIST_BUDGET = COUNT <= 50_000
const FALLBACK = COUNT <= 100_000
let cs: CrowdsecHandle
let fallback: PanelHandle, mirror: PanelHandle
let fbCookie: string, mCookie: string
const mirrorKey = randomBytes(24).toString('hex'),
  readerKey = randomBytes(24).toString('hex')
const PULL_SECONDS = 5

beforeAll(async () => {
  cs = await startCrowdsec({ agent: false })
  registerTestSecret(mirrorKey, readerKey)
  await cs.cscli(['bouncers', 'add', 'panel-mirror', '-k', mirrorKey])
  await cs.cscli(['bouncers', 'add', 'bench-reader', '-k', readerKey])
  for (let chunk = 0; chunk < COUNT / CHUNK; chunk++) {
    await postDecisions(
      cs,
      Array.from({ length: CHUNK }, (_, i) => {
        const n = chunk * CHUNK + i
        return {
          value: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
          scenario: `bench/s${n % 7}`,
          origin: n % 2 ? 'cscli' : 'crowdsec',
        }
      }),
    )
  }
  fallback = await startPanel({ env: panelEnvFor(cs) })
  mirror = await startPanel({
    env: { ...panelEnvFor(cs), LAPI_PANEL_BOUNCER_KEY: mirrorKey, LAPI_PANEL_PULL_SECONDS: String(PULL_SECONDS) },
  })
  fbCookie = await fallback.login()
  mCookie = await mirror.login()
}, 1_800_000)
afterAll(async () => {
  await fallback?.stop()
  await mirror?.stop()
  await cs?.stop()
})

async function timed(panel: PanelHandle, cookie: string, path: string) {
  const t = performance.now()
  const res = await panel.request(path, { cookie })
  const ms = performance.now() - t
  expect(res.status).toBe(200)
  return { ms, count: (res.json as unknown[]).length, headers: res.headers, json: res.json as Array<{ id: number; value: string }> }
}
async function engineAlone(): Promise<number> {
  const t = performance.now()
  const res = await fetch(`${cs.url}/v1/decisions`, { headers: { 'user-agent': LAPI_USER_AGENT, 'x-api-key': readerKey } })
  await res.text()
  return performance.now() - t
}
const fmt = (n: number) => n.toLocaleString('en')

it(`lists ${COUNT} active decisions: the 15 s copy, the mirror, pages, against the engine alone`, async () => {
  const figures: Figure[] = []
  const engine: number[] = []
  for (let i = 0; i < REPS; i++) engine.push(await engineAlone())
  const engineMs = median(engine)
  const vsEngine = `GET /v1/decisions alone, ${Math.round(engineMs)} ms`

  // Without the panel's key: a warm process whose 15 s copy a panel deletion just dropped.
  // Not with 500,000: the engine's answer takes longer than the client's 5 s timeout (503).
  const deleted = FALLBACK ? REPS : 0
  if (FALLBACK) {
    const ids = (await timed(fallback, fbCookie, '/api/security/decisions')).json
    expect(ids.length).toBe(COUNT)
    const uncached: number[] = []
    for (let i = 0; i < REPS; i++) {
      expect((await fallback.request(`/api/security/decisions/${ids[i]!.id}`, { method: 'DELETE', cookie: fbCookie })).status).toBeLessThan(
        300,
      )
      uncached.push((await timed(fallback, fbCookie, '/api/security/decisions')).ms)
    }
    figures.push({
      what: `no panel key: whole list, uncached (median of ${REPS})`,
      value: Math.round(median(uncached)),
      unit: 'ms',
      budget: LIST_BUDGET ? '<= 500' : '-',
      withinBudget: !LIST_BUDGET || median(uncached) <= 500,
      ratio: ratioOf(median(uncached), engineMs, vsEngine, '<= 1.0'),
    })
  }
  figures.push({
    what: `the engine alone: GET /v1/decisions (median of ${REPS})`,
    value: Math.round(engineMs),
    unit: 'ms',
    budget: '-',
    withinBudget: true,
  })

  // The mirror: the whole list (the contract without paging) and pages.
  await expect
    .poll(async () => Number((await mirror.request('/api/security/decisions?limit=1', { cookie: mCookie })).headers.get('x-total-count')), {
      timeout: 300_000,
    })
    .toBe(COUNT - deleted)
  const whole: number[] = []
  for (let i = 0; i < REPS; i++) whole.push((await timed(mirror, mCookie, '/api/security/decisions')).ms)
  figures.push({
    what: `mirror: whole list (median of ${REPS})`,
    value: Math.round(median(whole)),
    unit: 'ms',
    budget: LIST_BUDGET ? '<= 500' : '-',
    withinBudget: !LIST_BUDGET || median(whole) <= 500,
    ratio: ratioOf(median(whole), engineMs, vsEngine, '<= 1.0'),
  })
  const pageTimes = async (path: string) => {
    const xs: number[] = []
    for (let i = 0; i < 21; i++) xs.push((await timed(mirror, mCookie, path)).ms)
    return median(xs)
  }
  const first = await timed(mirror, mCookie, '/api/security/decisions?limit=100')
  const middle = first.json[0]!.id - Math.floor(COUNT / 2)
  for (const [what, path] of [
    ['mirror: first page of 100 (median of 21)', '/api/security/decisions?limit=100'],
    ['mirror: a page of 100 mid-list (cursor)', `/api/security/decisions?limit=100&before_id=${middle}`],
    ['mirror: a page of 100, q + origin filter', '/api/security/decisions?limit=100&q=bench/s3&origin=cscli'],
    ['mirror: a page of 100, scope filter', '/api/security/decisions?limit=100&scope=Ip'],
  ] as const) {
    const ms = await pageTimes(path)
    figures.push({ what, value: Number(ms.toFixed(1)), unit: 'ms', budget: '<= 20', withinBudget: ms <= 20 })
  }

  // A ban made outside the panel, until the list shows it (no panel change to trigger a pull).
  const bans: number[] = []
  for (let i = 0; i < 3; i++) {
    const value = `172.31.0.${i + 1}`
    await postDecisions(cs, [{ value }])
    const t = performance.now() // the ban is in the engine from here
    for (;;) {
      if ((await mirror.request(`/api/security/decisions?limit=1&q=${value}`, { cookie: mCookie })).json.length) break
      await new Promise((r) => setTimeout(r, 20))
    }
    bans.push(performance.now() - t)
  }
  const banMs = Math.max(...bans)
  figures.push({
    what: `mirror: ban to list, worst of 3 (stream every ${PULL_SECONDS} s)`,
    value: Math.round(banMs),
    unit: 'ms',
    budget: `<= ${PULL_SECONDS * 1000}`,
    withinBudget: banMs <= PULL_SECONDS * 1000,
  })
  const health = (await mirror.request('/api/system/health', { cookie: mCookie })).json.decision_mirror
  expect(health.decisions).toBe(COUNT - deleted + 3)
  reportFigures(
    `decisions-${COUNT}`,
    figures.map((f) => ({ ...f, what: f.what.replace('whole list', `whole list of ${fmt(COUNT)}`) })),
  )
})
