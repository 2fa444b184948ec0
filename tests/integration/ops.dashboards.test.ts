import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { startPanel, type PanelHandle } from '../support/panel'

let panel: PanelHandle
let cookie: string
const HOUR = 3_600_000

beforeAll(async () => {
  panel = await startPanel()
  cookie = await panel.login()
  const db = panel.db()
  await db.execute(
    "INSERT INTO target_groups (id, name, targets, scheme, lb_policy, created_at, updated_at) VALUES (1, 'g', '[]', 'http', 'round_robin', '', '')",
  )
  await db.execute(
    "INSERT INTO hosts (id, domain, target_group_id, tls_mode, tls_challenge, lan_only, created_at, updated_at) VALUES (1, 'lan.example.test', 1, 'none', 'http', 1, '', ''), (2, 'web.example.test', 1, 'none', 'http', 0, '', '')",
  )
  const now = Date.now()
  const thisHour = Math.floor(now / HOUR) * HOUR
  const rows: Array<[number, string, number | null, number, string, string]> = [
    // [ts, source, host_id, status, remote_ip, country]
    [thisHour + 1, 'caddy_access', 2, 200, '192.0.2.1', 'ZZ'],
    [thisHour + 2, 'caddy_access', 2, 404, '192.0.2.1', 'ZZ'],
    [thisHour - HOUR, 'caddy_access', 2, 500, '192.0.2.2', 'ZZ'],
    [thisHour - 5 * HOUR, 'caddy_access', 2, 302, '192.0.2.2', 'ZZ'],
    [thisHour - 30 * HOUR, 'caddy_access', 2, 200, '192.0.2.3', 'ZZ'], // outside the window
    [thisHour - 2 * HOUR, 'caddy_access', 1, 403, '198.51.100.9', 'YY'], // LAN gate
    [thisHour - 2 * HOUR, 'caddy_access', 2, 403, '198.51.100.9', 'YY'], // bouncer
    [thisHour - 2 * HOUR, 'caddy_access', 2, 403, '198.51.100.8', 'YY'], // bouncer
    [thisHour - 3 * HOUR, 'caddy_access', 2, 429, '198.51.100.8', 'XX'], // rate limit
    [thisHour - 3 * HOUR, 'waf_audit', 2, 403, '198.51.100.7', 'XX'], // WAF (its access line is the 403 below)
    [thisHour - 3 * HOUR, 'caddy_access', 2, 403, '198.51.100.7', 'XX'],
  ]
  for (const [ts, source, hostId, status, ip, country] of rows) {
    await db.execute({
      sql: 'INSERT INTO logs (ts_ms, source, host_id, status, remote_ip, country) VALUES (?, ?, ?, ?, ?, ?)',
      args: [ts, source, hostId, status, ip, country],
    })
  }
})
afterAll(async () => {
  await panel?.stop()
})

describe('dashboards against seeded logs', () => {
  it('traffic: 24 hourly buckets, oldest first, with exact class counts', async () => {
    const t = (await panel.request('/api/dashboard/traffic', { cookie })).json
    expect(t).toHaveLength(24)
    const last = t[23],
      prev = t[22]
    expect(Date.parse(last.ts)).toBe(Math.floor(Date.now() / HOUR) * HOUR)
    expect(last).toMatchObject({ total: 2, '2xx': 1, '4xx': 1 })
    expect(prev).toMatchObject({ total: 1, '5xx': 1 })
    expect(t.reduce((s: number, b: any) => s + b.total, 0)).toBe(9) // access rows inside the window
    expect(t.filter((b: any) => b.total === 0).length).toBe(19)
  })

  it('security: blocked counts by reason, attackers by country, top addresses', async () => {
    const s = (await panel.request('/api/dashboard/security', { cookie })).json
    expect(s.blocked_by).toEqual({ rate_limit: 1, lan_only: 1, waf: 1, bouncer: 2 })
    expect(s.blocked_24h).toBe(5)
    expect(s.attackers_by_country).toEqual([
      { country: 'XX', count: 3 },
      { country: 'YY', count: 3 },
    ])
    expect(s.top_ips[0]).toMatchObject({ ip: '198.51.100.7', count: 2 })
    expect(s.top_ips.map((i: any) => i.ip).sort()).toEqual(['198.51.100.7', '198.51.100.8', '198.51.100.9'])
  })

  it('the same figures once the hourly roll-ups hold the rows, and with new raw rows above the mark', async () => {
    const rolledUp = async () => {
      const r = await panel.db().execute('SELECT (SELECT last_id FROM logs_rollup_state) AS done, (SELECT max(id) FROM logs) AS last')
      return Number(r.rows[0]!.done) >= Number(r.rows[0]!.last)
    }
    await eventually(rolledUp, (done) => done, 20_000, 100)
    const blockedRollup = await panel.db().execute('SELECT sum(n) AS n FROM logs_hourly_blocked')
    expect(Number(blockedRollup.rows[0]!.n)).toBe(6) // the five 403/429 access rows and the WAF row
    const s = (await panel.request('/api/dashboard/security', { cookie })).json
    expect(s.blocked_by).toEqual({ rate_limit: 1, lan_only: 1, waf: 1, bouncer: 2 })
    expect(s.attackers_by_country).toEqual([
      { country: 'XX', count: 3 },
      { country: 'YY', count: 3 },
    ])
    const t = (await panel.request('/api/dashboard/traffic', { cookie })).json
    expect(t.reduce((sum: number, b: any) => sum + b.total, 0)).toBe(9)
    // One more blocked row, read raw until the next roll-up.
    await panel.db().execute({
      sql: "INSERT INTO logs (ts_ms, source, host_id, status, remote_ip, country) VALUES (?, 'caddy_access', 2, 429, '198.51.100.8', 'XX')",
      args: [Date.now() - 1000],
    })
    const after = (await panel.request('/api/dashboard/security', { cookie })).json
    expect(after.blocked_by.rate_limit).toBe(2)
    expect(after.attackers_by_country[0]).toEqual({ country: 'XX', count: 4 })
    expect(after.top_ips[0]).toMatchObject({ ip: '198.51.100.8', count: 3 })
  })

  it('health: every part', async () => {
    const h = (await panel.request('/api/dashboard/health', { cookie })).json
    expect(Object.keys(h).sort()).toEqual(['backups', 'client_addresses', 'geoip', 'problems', 'proxy', 'security_engine', 'suggestions'])
    // No country database in this panel: the one problem the list holds says so and where it is fixed.
    expect(h.problems.map((p: { kind: string; fix: { to: string } }) => [p.kind, p.fix.to])).toContainEqual([
      'geo_database_missing',
      '/security#countries',
    ])
  })
})
