import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decisionsFor, panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { freePort } from '../support/ports'
import { eventually } from '../support/http'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'

let cs: CrowdsecHandle
let panel: PanelHandle
let admin: string

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  panel = await startPanel({ env: panelEnvFor(cs) })
  admin = await panel.login()
  await postDecisions(cs, [
    { value: '198.51.100.20', origin: 'cscli', scenario: 'manual/ban' },
    { value: '198.51.100.32/28', origin: 'test-origin', scenario: 'manual/range' },
    { value: '10.9.0.0/16', origin: 'panel-country-ZZ', scenario: 'panel/country-ban:ZZ' },
    { value: '2001:db8::5', origin: 'crowdsec', scenario: 'crowdsecurity/http-probing' },
  ])
})
afterAll(async () => {
  await panel?.stop()
  await cs?.stop()
})

const list = async (query = '') => (await panel.request(`/api/security/decisions${query}`, { cookie: admin })).json as any[]

describe('decisions from the real local API', () => {
  it('lists every active decision with the api.md fields', async () => {
    const all = await list()
    expect(all.map((d) => d.value).sort()).toEqual(['10.9.0.0/16', '198.51.100.20', '198.51.100.32/28', '2001:db8::5'])
    // Without LAPI_PANEL_BOUNCER_KEY: the 15 s copy read with the proxy's key, paged the same way.
    const page = await panel.request('/api/security/decisions?limit=3', { cookie: admin })
    expect(page.headers.get('x-decisions-source')).toBe('engine')
    expect(page.headers.get('x-total-count')).toBe('4')
    expect(page.json.map((d: any) => d.id)).toEqual(
      all
        .map((d) => d.id)
        .sort((a, b) => b - a)
        .slice(0, 3),
    )
    expect(
      (await panel.request(`/api/security/decisions?before_id=${page.headers.get('x-next-before-id')}`, { cookie: admin })).json,
    ).toHaveLength(1)
    const ip = all.find((d) => d.value === '198.51.100.20')
    expect(ip).toMatchObject({ scope: 'Ip', type: 'ban', origin: 'cscli', scenario: 'manual/ban', country: null, as_number: null })
    expect(Date.parse(ip.until)).toBeGreaterThan(Date.now() + 3 * 3600_000)
    // The time left, as the engine words it (1.7.8 rounds a fresh 4h ban to 4h0m0s).
    expect(ip.duration).toMatch(/^(3h59m\d|4h0m0s)/)
  })

  it('filters by q (value or scenario), scope and origin', async () => {
    expect((await list('?q=198.51.100.2')).map((d) => d.value)).toEqual(['198.51.100.20'])
    expect((await list('?q=PROBING')).map((d) => d.value)).toEqual(['2001:db8::5'])
    expect((await list('?scope=Range')).map((d) => d.value).sort()).toEqual(['10.9.0.0/16', '198.51.100.32/28'])
    expect((await list('?origin=panel-country-ZZ')).map((d) => d.value)).toEqual(['10.9.0.0/16'])
    expect((await list('?scope=Range&origin=test-origin')).map((d) => d.value)).toEqual(['198.51.100.32/28'])
    const bad = await panel.request('/api/security/decisions?scope=Planet', { cookie: admin })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/scope: must be one of Ip, Range, Country, AS/)
  })

  it('answers from a 15 s cache that a panel mutation invalidates', async () => {
    await list() // fills the cache
    await postDecisions(cs, [{ value: '198.51.100.99' }])
    expect((await list()).map((d) => d.value)).not.toContain('198.51.100.99')
    const victim = (await list('?q=2001:db8::5'))[0]
    expect((await panel.request(`/api/security/decisions/${victim.id}`, { method: 'DELETE', cookie: admin })).status).toBe(204)
    const after = (await list()).map((d) => d.value)
    expect(after).toContain('198.51.100.99')
    expect(after).not.toContain('2001:db8::5')
    // Deleting it again is still a success (the engine answers 500 "doesn't exist" or re-expires it).
    expect((await panel.request(`/api/security/decisions/${victim.id}`, { method: 'DELETE', cookie: admin })).status).toBe(204)
    expect((await panel.request('/api/security/decisions/987654', { method: 'DELETE', cookie: admin })).status).toBe(204)
    expect((await panel.request('/api/security/decisions/abc', { method: 'DELETE', cookie: admin })).status).toBe(400)
    const audit = await panel.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'decision_delete'")
    expect(Number(audit.rows[0]!.n)).toBe(3)
  })

  it('unban-ip removes the Ip decisions and the ranges containing the address, but not a country ban', async () => {
    await postDecisions(cs, [
      { value: '10.9.8.7', scenario: 'a/one' },
      { value: '10.9.8.7', scenario: 'b/two' },
      { value: '10.9.8.0/24', origin: 'test-origin' },
    ])
    expect((await decisionsFor(cs, '10.9.8.7')).length).toBe(4)
    const res = await panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: admin, body: { ip: '10.9.8.7' } })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ ip: '10.9.8.7', removed_decision_count: 3 })
    expect(res.json.kept_country_decisions.map((d: any) => d.value)).toEqual(['10.9.0.0/16'])
    expect((await decisionsFor(cs, '10.9.8.7')).map((d) => d.origin)).toEqual(['panel-country-ZZ'])
  })

  it.each([
    [{ ip: 'not-an-ip' }, /ip: must be an IPv4 or IPv6 address/],
    [{ ip: '10.0.0.0/8' }, /ip: must be an IPv4 or IPv6 address/],
    [{ address: '10.0.0.1' }, /ip: is required/],
  ])('unban-ip refuses %j', async (body, message) => {
    const res = await panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: admin, body })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
  })

  it('reports the engine reachable in health', async () => {
    const h = await panel.request('/api/dashboard/health', { cookie: admin })
    expect(h.json.security_engine.reachable).toBe(true)
  })
})

describe('retired interfaces (spec Versioning 3)', () => {
  it.each([
    ['GET', '/api/threats/decisions'],
    ['POST', '/api/threats/unban'],
    ['POST', '/api/security/countries/expand'],
    ['POST', '/api/security/scenarios/mark-applied'],
    ['POST', '/api/security/appsec-tuning/mark-applied'],
  ])('%s %s answers 404', async (method, path) => {
    const res = await panel.request(path, { method, cookie: admin, body: method === 'POST' ? {} : undefined })
    expect(res.status).toBe(404)
    expect(res.json.error).toMatch(/was removed; use /)
  })
})

describe('the engine unreachable', () => {
  it('every security route answers 503 with {error} at once, and health shows it down', async () => {
    const dead = await startPanel({ env: { ...panelEnvFor(cs), LAPI_URL: `http://127.0.0.1:${await freePort()}` } })
    try {
      const cookie = await dead.login()
      for (const [method, path, body] of [
        ['GET', '/api/security/decisions'],
        ['DELETE', '/api/security/decisions/1'],
        ['POST', '/api/security/decisions/unban-ip', { ip: '10.0.0.1' }],
      ] as const) {
        const res = await dead.request(path, { method, cookie, body })
        expect(res.status).toBe(503)
        expect(res.json.error).toMatch(/^security engine unavailable: its local API at http:\/\/127\.0\.0\.1:\d+ is unreachable/)
      }
      const h = await dead.request('/api/dashboard/health', { cookie })
      expect(h.json.security_engine.reachable).toBe(false)
      const sys = await dead.request('/api/system/health', { cookie })
      expect(sys.json.security_engine.reachable).toBe(false)
      // The probe publishes the state, then writes its audit row: wait for the row.
      const downs = await eventually(
        async () => Number((await dead.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'security_engine_down'")).rows[0]!.n),
        (n) => n >= 1,
        15_000,
        100,
      )
      expect(downs).toBe(1)
    } finally {
      await dead.stop()
    }
  })
})
