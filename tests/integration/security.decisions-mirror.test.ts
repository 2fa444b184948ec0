import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { LAPI_USER_AGENT, panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle, type TestDecision } from '../support/crowdsec'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'

// The decision mirror (LAPI_PANEL_BOUNCER_KEY) against the real local API: the
// list is the engine's active decisions id for id, follows changes made outside
// the panel through the stream alone, pages without losing or repeating one,
// resynchronises after its key stops working, and never reads with the proxy's key.

let cs: CrowdsecHandle
let panel: PanelHandle
let admin: string
const mirrorKey = randomBytes(24).toString('hex')
const readerKey = randomBytes(24).toString('hex') // the test's own reads, so neither panel key moves

beforeAll(async () => {
  cs = await startCrowdsec({ agent: false })
  registerTestSecret(cs.machinePassword, cs.bouncerKey, mirrorKey, readerKey)
  await cs.cscli(['bouncers', 'add', 'panel-mirror', '-k', mirrorKey])
  await cs.cscli(['bouncers', 'add', 'test-reader', '-k', readerKey])
  await postDecisions(cs, [
    { value: '198.51.100.20', origin: 'cscli', scenario: 'manual/ban' },
    // Two decisions on one value: the engine lists both (the stream, deduplicated by default, would send one).
    { value: '198.51.100.21', scenario: 'a/short', duration: '1h' },
    { value: '198.51.100.21', scenario: 'b/long', duration: '5h' },
    { value: '198.51.100.32/28', origin: 'test-origin', scenario: 'manual/range' },
    { value: '198.51.100.40', type: 'captcha' },
    { value: '198.51.100.41', type: 'throttle' },
    { value: '2001:db8::5', origin: 'crowdsec', scenario: 'crowdsecurity/http-probing' },
    { value: 'ZZ', scope: 'Country' as TestDecision['scope'], scenario: 'manual/country' },
    { value: '64500', scope: 'AS' as TestDecision['scope'], scenario: 'manual/as' },
  ])
  panel = await startPanel({
    env: { ...panelEnvFor(cs), LAPI_PANEL_BOUNCER_KEY: mirrorKey, LAPI_PANEL_PULL_SECONDS: '1', PANEL_ENGINE_PROBE_SECONDS: '1' },
  })
  admin = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
  await cs?.stop()
})

type Decision = { id: number; value: string; scope: string; type: string; origin: string; scenario: string; duration: string }

/** Every active decision, as the engine itself answers a bouncer. */
async function engineDecisions(): Promise<Decision[]> {
  const res = await fetch(`${cs.url}/v1/decisions`, { headers: { 'user-agent': LAPI_USER_AGENT, 'x-api-key': readerKey } })
  expect(res.status).toBe(200)
  return ((await res.json()) as Decision[] | null) ?? []
}
const list = async (query = '') => panel.request(`/api/security/decisions${query}`, { cookie: admin })
const ids = (ds: Array<{ id: number }>) => ds.map((d) => d.id).sort((a, b) => a - b)
const mirrorHealth = async () => (await panel.request('/api/system/health', { cookie: admin })).json.decision_mirror

/** The list and the engine agree id for id (the mirror follows at its next pull). */
async function expectExact() {
  await vi.waitFor(
    async () => {
      const [engine, res] = [await engineDecisions(), await list()]
      expect(ids(res.json)).toEqual(ids(engine))
      expect(Number(res.headers.get('x-total-count'))).toBe(engine.length)
    },
    { timeout: 15_000, interval: 250 },
  )
}

async function bouncer(name: string): Promise<{ last_pull?: string | null }> {
  const all = JSON.parse(await cs.cscli(['bouncers', 'list', '-o', 'json'])) as Array<{ name: string; last_pull?: string | null }>
  return all.find((b) => b.name === name)!
}

describe('the decision mirror against the real engine', () => {
  it('answers every active decision the engine holds, id for id, and says how fresh it is', async () => {
    const engine = await engineDecisions()
    expect(engine).toHaveLength(9)
    const res = await list()
    expect(res.status).toBe(200)
    expect(ids(res.json)).toEqual(ids(engine))
    expect(res.json.map((d: Decision) => d.id)).toEqual(ids(engine).reverse()) // newest first
    expect(res.headers.get('x-decisions-source')).toBe('mirror')
    expect(res.headers.get('x-total-count')).toBe('9')
    expect(res.headers.get('x-next-before-id')).toBeNull()
    const synced = Date.parse(res.headers.get('x-decisions-synced-at')!)
    expect(synced).toBeGreaterThan(Date.now() - 60_000)
    for (const e of engine) {
      const d = res.json.find((x: Decision) => x.id === e.id)
      expect(d).toMatchObject({ value: e.value, scope: e.scope, type: e.type, origin: e.origin, scenario: e.scenario })
    }
    const twice = res.json
      .filter((d: Decision) => d.value === '198.51.100.21')
      .map((d: Decision) => d.scenario)
      .sort()
    expect(twice).toEqual(['a/short', 'b/long'])
    expect(res.json.find((d: Decision) => d.scenario === 'b/long').duration).toMatch(/^(4h59m\d+s|5h0m0s)$/)
    const h = await mirrorHealth()
    expect(h).toMatchObject({ enabled: true, pull_seconds: 1, decisions: 9, last_error: null })
    // The sources the proxy's bouncer refuses: Ip and Range, not throttle, one per value.
    expect(h.banned_sources).toBe(5)
  })

  it('filters q, scope and origin over the mirror as the list did over the engine', async () => {
    expect((await list('?q=PROBING')).json.map((d: Decision) => d.value)).toEqual(['2001:db8::5'])
    expect((await list('?scope=Range')).json.map((d: Decision) => d.value)).toEqual(['198.51.100.32/28'])
    expect((await list('?scope=Country')).json.map((d: Decision) => d.value)).toEqual(['ZZ'])
    expect((await list('?origin=test-origin&scope=Range')).json.map((d: Decision) => d.value)).toEqual(['198.51.100.32/28'])
    const q = await list('?q=198.51.100.2')
    expect(q.json.map((d: Decision) => d.value).sort()).toEqual(['198.51.100.20', '198.51.100.21', '198.51.100.21'])
    expect(q.headers.get('x-total-count')).toBe('3')
  })

  it('follows bans and unbans made outside the panel through the stream alone, and expiry', async () => {
    await postDecisions(cs, [
      { value: '198.51.100.77', scenario: 'outside/ban' },
      { value: '198.51.100.78', duration: '3s' },
    ])
    await expectExact()
    expect((await list('?q=198.51.100.77')).json).toHaveLength(1)
    await cs.cscli(['decisions', 'delete', '--ip', '198.51.100.77'])
    await expectExact()
    expect((await list('?q=198.51.100.77')).json).toEqual([])
    // The 3 s ban leaves the list when it expires, as it leaves the engine's answer.
    await vi.waitFor(async () => expect((await list('?q=198.51.100.78')).json).toEqual([]), { timeout: 15_000, interval: 250 })
    await expectExact()
  })

  it('a panel change is in the list at once (the mirror pulls it before answering)', async () => {
    const victim = (await list('?q=2001:db8::5')).json[0]
    expect((await panel.request(`/api/security/decisions/${victim.id}`, { method: 'DELETE', cookie: admin })).status).toBe(204)
    expect((await list()).json.map((d: Decision) => d.id)).not.toContain(victim.id)
    const res = await panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: admin, body: { ip: '198.51.100.21' } })
    expect(res.json.removed_decision_count).toBe(2)
    expect((await list('?q=198.51.100.21')).json).toEqual([])
    await expectExact()
  })

  it('pages with limit and before_id: every decision once, in order, with the same total', async () => {
    const many = Array.from({ length: 40 }, (_, i) => ({ value: `10.77.0.${i + 1}`, scenario: `page/s${i % 3}` }))
    await postDecisions(cs, many)
    await expectExact()
    const all = (await list()).json as Decision[]
    const walk = async (query: string) => {
      const seen: number[] = []
      let cursor: string | null = null,
        totals = new Set<string>(),
        pages = 0
      do {
        const res = await list(`?${query}${cursor ? `&before_id=${cursor}` : ''}`)
        expect(res.status).toBe(200)
        expect(res.json.length).toBeLessThanOrEqual(7)
        seen.push(...res.json.map((d: Decision) => d.id))
        totals.add(res.headers.get('x-total-count')!)
        cursor = res.headers.get('x-next-before-id')
        pages++
      } while (cursor)
      return { seen, totals: [...totals], pages }
    }
    const everything = await walk('limit=7')
    expect(everything.seen).toEqual(all.map((d) => d.id))
    expect(everything.totals).toEqual([String(all.length)])
    expect(everything.pages).toBe(Math.ceil(all.length / 7))
    const filtered = await walk('limit=7&q=page/s1')
    const expected = all.filter((d) => d.scenario === 'page/s1').map((d) => d.id)
    expect(filtered.seen).toEqual(expected)
    expect(filtered.totals).toEqual([String(expected.length)])
    // before_id alone: pages of 100.
    expect((await list(`?before_id=${all[0]!.id}`)).json.map((d: Decision) => d.id)).toEqual(all.slice(1).map((d) => d.id))
    for (const bad of ['limit=0', 'limit=1001', 'limit=abc', 'before_id=-3']) {
      const res = await list(`?${bad}`)
      expect(res.status, bad).toBe(400)
      expect(res.json.error).toMatch(/^(limit|before_id): must be/)
    }
  })

  it("never reads with the proxy's key: its bouncer has never pulled", async () => {
    await list()
    await panel.request('/api/security/check-self', { cookie: admin })
    await panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: admin, body: { ip: '10.77.0.1' } })
    // Past two engine probes (every second here): the probe reads nothing with the mirror on.
    const mark = Date.now()
    await vi.waitFor(
      async () => {
        const checked = (await panel.request('/api/system/health', { cookie: admin })).json.security_engine.checked_at
        expect(Date.parse(checked)).toBeGreaterThan(mark + 1000)
      },
      { timeout: 15_000, interval: 250 },
    )
    expect((await bouncer('panel-bouncer')).last_pull ?? null).toBeNull()
    expect((await bouncer('panel-mirror')).last_pull).toBeTruthy()
  })

  it('resynchronises in full after its pulls fail, and is exact again', async () => {
    const before = await mirrorHealth()
    await cs.cscli(['bouncers', 'delete', 'panel-mirror'])
    await vi.waitFor(async () => expect((await mirrorHealth()).last_error).toMatch(/security engine answered 403/), {
      timeout: 15_000,
      interval: 250,
    })
    // While it is cut off the list still answers what it held, as of its last pull.
    const stale = await list()
    expect(stale.status).toBe(200)
    expect(Date.parse(stale.headers.get('x-decisions-synced-at')!)).toBeLessThanOrEqual(Date.parse((await mirrorHealth()).last_error_at))
    // Changes the mirror cannot see now; a fresh bouncer of the same key has no last pull at all.
    await postDecisions(cs, [{ value: '198.51.100.90', scenario: 'while/away' }])
    await cs.cscli(['decisions', 'delete', '--ip', '10.77.0.2'])
    await cs.cscli(['bouncers', 'add', 'panel-mirror', '-k', mirrorKey])
    await vi.waitFor(
      async () => {
        const h = await mirrorHealth()
        expect(h.last_error).toBeNull()
        expect(h.full_syncs).toBeGreaterThan(before.full_syncs)
      },
      { timeout: 15_000, interval: 250 },
    )
    await expectExact()
    // And after the engine itself restarts.
    await cs.restart()
    await postDecisions(cs, [{ value: '198.51.100.91', scenario: 'after/restart' }])
    await expectExact()
  })

  it('streams a whole list above a thousand decisions: the same JSON array, id for id', async () => {
    await postDecisions(
      cs,
      Array.from({ length: 1500 }, (_, i) => ({ value: `10.88.${i >> 8}.${i & 255}`, scenario: 'bulk/stream' })),
    )
    await expectExact()
    const res = await list()
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    // Written in batches (chunked), not as one string of known length like a page.
    expect([res.headers.get('transfer-encoding'), res.headers.get('content-length')]).toEqual(['chunked', null])
    expect(res.json.length).toBeGreaterThan(1500)
    expect(res.json.filter((d: Decision) => d.scenario === 'bulk/stream')).toHaveLength(1500)
    // The first batch, a batch boundary and the last item are whole decisions (the contract check validates every item).
    expect(res.json[500]).toMatchObject({ id: expect.any(Number), duration: expect.stringMatching(/^\d+h\d+m\d+s$/) })
    const page = await list('?limit=1000')
    expect(page.json.map((d: Decision) => d.id)).toEqual(res.json.slice(0, 1000).map((d: Decision) => d.id))
    expect(Number(page.headers.get('content-length'))).toBeGreaterThan(0)
  })
})
