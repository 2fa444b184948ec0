import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decisionsFor, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'

// The guard rails on a ban (issue 35, item 4), against the real local API: a ban that
// reaches the caller's own address, a trusted proxy, a LAN/loopback range or a whitelisted
// entry is refused with 409 naming which, nothing reaches the engine, and confirm: true bans.
// The test client connects from 127.0.0.1, a trusted proxy of the panel here, so its own
// address is what X-Forwarded-For says (a public one, apart from the LAN ranges).

const OWN = '203.0.113.9'
const PANEL_PROXY = '192.0.2.50' // PANEL_TRUSTED_PROXIES: a public address, in no LAN range
const EDGE_PROXY = '192.0.2.64/28' // the setting proxy.trusted_proxies (the CDN in front of Caddy)
const WHITELISTED = '198.18.0.7'
const PUBLIC = '198.51.100.201'

let cs: CrowdsecHandle
let panel: PanelHandle
let admin: string

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  panel = await startPanel({ env: { ...panelEnvFor(cs), PANEL_TRUSTED_PROXIES: `127.0.0.1/32,${PANEL_PROXY}/32` } })
  admin = await panel.login()
  const put = await panel.request('/api/settings', { method: 'PUT', cookie: admin, body: { 'proxy.trusted_proxies': [EDGE_PROXY] } })
  expect(put.status, put.text).toBe(200)
  const wl = await panel.request('/api/security/whitelist', { method: 'POST', cookie: admin, body: { value: WHITELISTED } })
  expect(wl.status, wl.text).toBe(201)
})
afterAll(async () => {
  await panel?.stop()
  await cs?.stop()
})

const ban = (value: string, extra: Record<string, unknown> = {}) =>
  panel.request('/api/security/decisions', {
    method: 'POST',
    cookie: admin,
    headers: { 'x-forwarded-for': OWN },
    body: { value, duration: '1h', reason: 'guard test', ...extra },
  })

const auditRows = async (action: string) =>
  (await panel.db().execute({ sql: "SELECT raw FROM logs WHERE source = 'audit' AND message = ?", args: [action] })).rows.map((r) =>
    JSON.parse(String(r.raw)),
  )

describe('a ban that would lock the operator out needs confirm', () => {
  it.each([
    [
      'own address',
      '203.0.113.0/24',
      '203.0.113.9',
      `203.0.113.0/24 contains ${OWN}, your own address: banning it locks you out of the hosts behind the proxy`,
    ],
    ['own address, exactly', OWN, OWN, `${OWN} is your own address: banning it locks you out of the hosts behind the proxy`],
    ['trusted proxy of the panel', PANEL_PROXY, PANEL_PROXY, `${PANEL_PROXY} is a trusted proxy (PANEL_TRUSTED_PROXIES)`],
    [
      'trusted proxy of the proxy',
      '192.0.2.70',
      '192.0.2.70',
      `192.0.2.70 is inside the trusted proxy ${EDGE_PROXY} (the setting proxy.trusted_proxies)`,
    ],
    ['LAN address', '192.168.1.20', '192.168.1.20', '192.168.1.20 is inside the LAN/loopback range 192.168.0.0/16'],
    ['loopback', '127.0.0.1', '127.0.0.1', '127.0.0.1 is inside the LAN/loopback range 127.0.0.0/8'],
    [
      'whitelisted entry',
      '198.18.0.0/24',
      '198.18.0.9',
      `198.18.0.0/24 contains the whitelisted ${WHITELISTED}, which the ban will not reach`,
    ],
  ])('%s: 409 naming it, nothing banned, audited; confirm bans it', async (_name, value, probe, words) => {
    const refused = await ban(value)
    expect(refused.status, refused.text).toBe(409)
    expect(refused.json.error).toContain(words)
    expect(refused.json.error).toMatch(/; send confirm: true to ban anyway$/)
    expect((await decisionsFor(cs, probe)).filter((d) => d.value === value)).toEqual([])
    expect((await auditRows('decision_ban_refused')).some((r) => r.value === value)).toBe(true)

    const confirmed = await ban(value, { confirm: true })
    expect(confirmed.status, confirmed.text).toBe(201)
    expect((await decisionsFor(cs, probe)).filter((d) => d.value === value).map((d) => d.origin)).toEqual(['panel'])
    const row = (await auditRows('decision_ban')).find((r) => r.value === value)
    expect(row?.confirmed_guards?.length).toBeGreaterThan(0)
  })

  it('a public address that reaches none of them bans as before, without confirm', async () => {
    const res = await ban(PUBLIC)
    expect(res.status, res.text).toBe(201)
    expect(res.json).toEqual({ value: PUBLIC, scope: 'Ip', type: 'ban', origin: 'panel', scenario: 'panel/manual-ban', duration: '1h' })
    expect((await decisionsFor(cs, PUBLIC)).map((d) => d.origin)).toEqual(['panel'])
  })

  it('an address a whitelist entry covers whole is refused even with confirm: the ban would never apply', async () => {
    const res = await ban(WHITELISTED, { confirm: true })
    expect(res.status).toBe(409)
    expect(res.json.error).toBe(
      `value: ${WHITELISTED} is covered by the whitelist entry ${WHITELISTED}; remove it from the whitelist first`,
    )
    expect((await decisionsFor(cs, WHITELISTED)).filter((d) => d.origin === 'panel' && d.value === WHITELISTED)).toEqual([])
  })

  it('confirm must be a boolean', async () => {
    const res = await ban('198.51.100.202', { confirm: 'yes' })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^confirm: /)
  })

  it('the list shows the reason given for a panel ban', async () => {
    const list = (await panel.request(`/api/security/decisions?q=${PUBLIC}&fresh=1`, { cookie: admin })).json as any[]
    expect(list.map((d) => [d.value, d.reason])).toEqual([[PUBLIC, 'guard test']])
  })
})
