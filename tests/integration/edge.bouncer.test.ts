import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alertsFor, decisionsFor, postDecisions, type CrowdsecHandle } from '../support/crowdsec'
import { startEdgeStack, type EdgeStack } from '../support/edge-stack'
import { eventually } from '../support/http'
import { createGroup, createHost, type ProxyStack } from '../support/proxy-stack'

// The security path end to end, from public-looking clients in a network
// namespace through the production Caddy (bouncer + WAF) to the whole engine
// (agent reading the logs the panel's configuration writes, and the local API).
// 198.51.100.10 is in the harness whitelist (the engine's own scenarios never
// act on it); .200 and up are left to the engine.

const POLL_SECONDS = 3
const HOST = 'shop.example.test',
  QUIET_HOST = 'quiet.example.test'
const CLEAN = '198.51.100.10',
  BANNED = '198.51.100.200',
  IN_RANGE = '198.51.100.201',
  OUTSIDE_RANGE = '198.51.100.150'
const WAF_ATTACKER = '198.51.100.210',
  QUIET_ATTACKER = '198.51.100.220'

let edge: EdgeStack
let cs: CrowdsecHandle
let stack: ProxyStack

beforeAll(async () => {
  edge = await startEdgeStack({
    clientAddresses: [CLEAN, BANNED, IN_RANGE, OUTSIDE_RANGE, WAF_ATTACKER, QUIET_ATTACKER],
    tickerSeconds: POLL_SECONDS,
  })
  ;({ cs, stack } = edge)
  const group = await createGroup(stack, { name: 'shop', targets: [{ address: `127.0.0.1:${edge.up.port}` }] })
  for (const domain of [HOST, QUIET_HOST]) {
    const res = await createHost(stack, {
      domain,
      target_group_id: group.id,
      waf_enabled: true,
      waf_mode: 'blocking',
      true_detect_mode: domain === QUIET_HOST,
    })
    expect(res.status, res.text).toBe(201)
    expect(res.json.reconcile.status).toBe('applied')
  }
  // The profiles the panel wrote for true_detect_mode are read when the local API starts.
  await cs.restart()
})
afterAll(async () => {
  await edge?.stop()
})

const get = (from: string, path = '/', host = HOST) => edge.get(from, host, path)
/** Waits at most the bouncer's poll interval plus one second for `status`. */
const becomes = (from: string, status: number, path = '/') =>
  eventually(
    () => get(from, path),
    (r) => r.status === status,
    (POLL_SECONDS + 1) * 1000,
    100,
  )

describe('the bouncer in the production Caddy, fed by the real local API', () => {
  it('a ban made in the engine gives 403 within the poll interval plus one second; the WAF never sees the request', async () => {
    expect((await get(BANNED)).status).toBe(200)
    await postDecisions(cs, [{ value: BANNED, origin: 'cscli', scenario: 'manual/ban' }])
    expect((await becomes(BANNED, 403, '/clean-page')).status).toBe(403)
    // An SQL injection from the banned source is answered by the bouncer before the
    // WAF: no audit entry for it (the WAF writes one for every blocked SQL
    // injection, as the engine tests below show).
    const marker = `banned-probe-${Date.now()}`
    expect((await get(BANNED, `/${marker}?q=%27%20OR%20%271%27%3D%271`)).status).toBe(403)
    await new Promise((r) => setTimeout(r, 500))
    expect(readFileSync(cs.wafAuditLogFile, 'utf8')).not.toContain(marker)
    // Its neighbour is not affected.
    expect((await get(CLEAN)).status).toBe(200)
  })

  it('unban through the panel gives 200 again within the poll interval plus one second', async () => {
    const res = await stack.panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: stack.admin, body: { ip: BANNED } })
    expect(res.status, res.text).toBe(200)
    expect(await decisionsFor(cs, BANNED)).toEqual([])
    expect((await becomes(BANNED, 200)).status).toBe(200)
  })

  it('a ban made through the panel gives 403 within the poll interval plus one second, and is audited; its bad input is refused', async () => {
    const res = await stack.panel.request('/api/security/decisions', {
      method: 'POST',
      cookie: stack.admin,
      body: { value: BANNED, duration: '1h', reason: 'e2e' },
    })
    expect(res.status, res.text).toBe(201)
    expect(res.json).toMatchObject({ value: BANNED, scope: 'Ip', type: 'ban', origin: 'panel', duration: '1h' })
    expect((await becomes(BANNED, 403, '/clean-page')).status).toBe(403)
    expect((await decisionsFor(cs, BANNED)).map((d) => d.origin)).toEqual(['panel'])
    const audit = await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'decision_ban'")
    expect(JSON.parse(String(audit.rows.at(-1)?.raw)).value).toBe(BANNED)
    for (const [body, why] of [
      [{ value: 'not-an-ip' }, /value: must be an IP address or a CIDR/],
      [{ value: '198.51.100.9', duration: '10s' }, /duration: must be a duration from 1m to 8760h/],
      [{ value: '198.51.100.9', extra: 1 }, /extra/],
    ] as const) {
      const bad = await stack.panel.request('/api/security/decisions', { method: 'POST', cookie: stack.admin, body })
      expect(bad.status).toBe(400)
      expect(bad.json.error).toMatch(why)
    }
    expect(await decisionsFor(cs, '198.51.100.9')).toEqual([])
    expect(
      (await stack.panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: stack.admin, body: { ip: BANNED } })).status,
    ).toBe(200)
    expect((await becomes(BANNED, 200)).status).toBe(200)
  })

  it('a ban on a range covers its addresses and nothing outside it', async () => {
    await postDecisions(cs, [{ value: '198.51.100.192/28', origin: 'cscli', scenario: 'manual/range' }])
    expect((await becomes(IN_RANGE, 403)).status).toBe(403)
    expect((await get(OUTSIDE_RANGE)).status).toBe(200)
    await stack.panel.request('/api/security/decisions/unban-ip', { method: 'POST', cookie: stack.admin, body: { ip: IN_RANGE } })
    expect((await becomes(IN_RANGE, 200)).status).toBe(200)
  })
})

describe("the engine's own decisions from the WAF's audit log", () => {
  const attack = (from: string, host: string, n: number) => get(from, `/search?n=${n}&q=%27%20OR%20%271%27%3D%271`, host)

  it('repeated WAF blocks from one source become a ban (panel/coraza-waf-blocks) and then 403 at the bouncer', async () => {
    for (let n = 0; n < 6; n++) expect((await attack(WAF_ATTACKER, HOST, n)).status).toBe(403)
    const decisions = await eventually(
      () => decisionsFor(cs, WAF_ATTACKER),
      (d) => d.some((x) => x.scenario === 'panel/coraza-waf-blocks'),
      20_000,
    )
    expect(decisions.map((d) => d.scenario)).toContain('panel/coraza-waf-blocks')
    // A clean request from the same source is now refused by the bouncer, not the WAF.
    expect((await becomes(WAF_ATTACKER, 403, '/clean-page')).status).toBe(403)
  })

  it('with true_detect_mode on the host, the same blocks raise an alert but no decision', async () => {
    for (let n = 0; n < 6; n++) expect((await attack(QUIET_ATTACKER, QUIET_HOST, n)).status).toBe(403)
    const alerts = await eventually(
      () => alertsFor(cs, QUIET_ATTACKER),
      (a) => a.some((x) => x.scenario === 'panel/coraza-waf-blocks'),
      20_000,
    )
    expect(alerts.map((a) => a.scenario)).toContain('panel/coraza-waf-blocks')
    expect(alerts.find((a) => a.scenario === 'panel/coraza-waf-blocks')!.decisions ?? []).toEqual([])
    expect((await decisionsFor(cs, QUIET_ATTACKER)).filter((d) => d.scenario === 'panel/coraza-waf-blocks')).toEqual([])
    // Clean requests from that source still reach the upstream.
    expect((await get(QUIET_ATTACKER, '/clean-page', QUIET_HOST)).status).toBe(200)
  })
})
