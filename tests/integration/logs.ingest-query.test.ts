import { appendFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, readSseUntil } from '../support/http'
import { makeTempDir } from '../support/processes'
import { startPanel, type PanelHandle } from '../support/panel'

const T0 = Date.parse('2026-11-20T10:00:00Z')
interface Line { ts?: number; host?: string; hostId?: number; rule?: number; status?: number; method?: string; uri?: string; ip?: string; ua?: string; dur?: number }
function accessLine(l: Line): string {
  return JSON.stringify({
    level: (l.status ?? 200) >= 500 ? 'error' : 'info', ts: (l.ts ?? T0) / 1000, logger: `http.log.access${l.hostId ? `.host_${l.hostId}` : ''}`, msg: 'handled request',
    request: { remote_ip: l.ip ?? '192.0.2.1', remote_port: '1', proto: 'HTTP/1.1', method: l.method ?? 'GET', host: l.host ?? 'a.example.test', uri: l.uri ?? '/', headers: { 'User-Agent': [l.ua ?? 'curl/8'] } },
    duration: (l.dur ?? 10) / 1000, size: 1, status: l.status ?? 200, resp_headers: l.rule ? { 'X-Panel-Rule-Id': [String(l.rule)] } : {},
  }) + '\n'
}

let panel: PanelHandle
let cookie: string
let logDir: string
const access = () => join(logDir, 'access.log')
const api = async (path: string) => (await panel.request(path, { cookie })).json
// Audit rows share the table: counts here are of ingested rows only.
const INGESTED = 'source=caddy_access,caddy_error,waf_audit'
const count = async (q = '') => (await api(`/api/logs/stats?${INGESTED}${q.replace(/^\?/, '&')}`)).total as number

beforeAll(async () => {
  logDir = makeTempDir('logs-')
  panel = await startPanel({ env: { PROXY_LOG_DIR: logDir } })
  cookie = await panel.login()
})
afterAll(async () => { await panel?.stop() })

describe('ingestion from files', () => {
  it('ingests access, error and WAF lines, keeps malformed ones, and waits for a partial line to finish', async () => {
    writeFileSync(access(), accessLine({ uri: '/first' }) + 'this is not json\n' + accessLine({ uri: '/partial' }).trimEnd())
    writeFileSync(join(logDir, 'error.log'), JSON.stringify({ level: 'error', ts: T0 / 1000, logger: 'http.log.error', msg: 'dial tcp: connection refused', request: { remote_ip: '192.0.2.9', method: 'GET', host: 'a.example.test', uri: '/x' }, status: 502 }) + '\n')
    writeFileSync(join(logDir, 'waf-audit.log'), JSON.stringify({ transaction: { unix_timestamp: T0 * 1e6, client_ip: '192.0.2.8', server_id: 'a.example.test', request: { method: 'GET', uri: '/?q=1' }, response: { status: 403 }, is_interrupted: true }, messages: [{ message: 'Total Score: 8', data: { id: 949110, severity: -1 } }, { message: 'x', data: { id: 942100, severity: 2, msg: 'SQLi' } }] }) + '\n')
    await eventually(() => count(), (n) => n === 4, 5_000, 100)
    const rows = await api(`/api/logs?limit=10&${INGESTED}`)
    expect(rows.map((r: any) => r.source).sort()).toEqual(['caddy_access', 'caddy_access', 'caddy_error', 'waf_audit'])
    expect(rows.find((r: any) => r.raw === 'this is not json')).toMatchObject({ level: 'error', message: expect.stringMatching(/unparsed/) })
    expect(rows.find((r: any) => r.source === 'waf_audit')).toMatchObject({ waf_rule_id: 942100, waf_severity: 'CRITICAL', waf_anomaly_score: 8, status: 403 })
    appendFileSync(access(), '\n')
    await eventually(() => count(), (n) => n === 5, 5_000, 100)
    expect((await api('/api/logs?path=/partial')).length).toBe(1)
    expect(await api(`/api/logs/${rows[0].id}`)).toMatchObject({ id: rows[0].id })
    expect((await panel.request('/api/logs/999999', { cookie })).status).toBe(404)
  })

  it('stores a 1.5 MiB line truncated and an invalid UTF-8 line, and carries on', async () => {
    appendFileSync(access(), 'y'.repeat(1_500_000) + '\n')
    appendFileSync(access(), Buffer.concat([Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from('\n')]))
    appendFileSync(access(), accessLine({ uri: '/after-bad' }))
    await eventually(() => api('/api/logs?path=/after-bad'), (r) => r.length === 1, 5_000, 100)
    const big = (await api('/api/logs?level=error&limit=5')).find((r: any) => r.raw?.startsWith('yyy'))
    expect(big.raw.length).toBeLessThan(70_000)
  })

  it('survives rotation and truncation', async () => {
    const before = await count()
    renameSync(access(), `${access()}.1`)
    writeFileSync(access(), accessLine({ uri: '/rotated' }))
    await eventually(() => api('/api/logs?path=/rotated'), (r) => r.length === 1, 5_000, 100)
    truncateSync(access(), 0)
    appendFileSync(access(), accessLine({ uri: '/truncated' }))
    await eventually(() => api('/api/logs?path=/truncated'), (r) => r.length === 1, 5_000, 100)
    expect(await count()).toBe(before + 2)
  })

  it('a panel killed in the middle of a file neither loses nor duplicates rows', async () => {
    const before = await count()
    const lines = Array.from({ length: 5000 }, (_, i) => accessLine({ uri: `/bulk/${i}` })).join('')
    await panel.kill('SIGKILL')
    appendFileSync(access(), lines)
    panel = await startPanel({ dataDir: panel.dataDir, env: { PROXY_LOG_DIR: logDir } })
    cookie = await panel.login()
    await eventually(() => count(), (n) => n > before, 10_000, 20)
    await panel.kill('SIGKILL') // mid-file
    panel = await startPanel({ dataDir: panel.dataDir, env: { PROXY_LOG_DIR: logDir } })
    cookie = await panel.login()
    await eventually(() => count('?path=/bulk/'), (n) => n >= 5000, 20_000, 100)
    await new Promise((r) => setTimeout(r, 500))
    expect(await count('?path=/bulk/')).toBe(5000)
  })
})

describe('filters, stats and timeseries on known rows', () => {
  const H = 3_600_000
  beforeAll(async () => {
    const seed = [
      { ts: T0, host: 'shop.example.test', hostId: 1, status: 200, method: 'GET', uri: '/products', ip: '198.51.100.5', dur: 10 },
      { ts: T0 + 1000, host: 'shop.example.test', hostId: 1, rule: 4, status: 201, method: 'POST', uri: '/api/cart', ip: '198.51.100.6', dur: 20 },
      { ts: T0 + H, host: 'shop.example.test', hostId: 1, status: 404, method: 'GET', uri: '/missing', ip: '10.1.2.3', dur: 30, ua: 'scanner/1.0' },
      { ts: T0 + H + 5, host: 'blog.example.test', hostId: 2, status: 500, method: 'GET', uri: '/boom', ip: '10.1.2.4', dur: 40 },
      { ts: T0 + 2 * H, host: 'blog.example.test', hostId: 2, status: 302, method: 'GET', uri: '/old', ip: '2001:db8::7', dur: 50 },
    ]
    appendFileSync(access(), seed.map((l) => accessLine({ ...l, uri: `/seed${l.uri}` })).join(''))
    await eventually(() => count('?path=/seed/'), (n) => n === 5, 5_000, 100)
  })
  const seeded = (q: string) => api(`/api/logs?path=/seed/&${q}`).then((rows) => rows.map((r: any) => r.path.replace('/seed', '')).sort())

  it.each([
    ['status=4xx', ['/missing']], ['status=500-504', ['/boom']], ['status=200,302', ['/old', '/products']],
    ['method=POST', ['/api/cart']], ['host_id=2', ['/boom', '/old']], ['host_domain=shop.example.test', ['/api/cart', '/missing', '/products']],
    ['host_id=2&host_domain=shop.example.test', ['/api/cart', '/boom', '/missing', '/old', '/products']], ['rule_id=4', ['/api/cart']],
    ['remote_ip=198.51.100', ['/api/cart', '/products']], ['remote_ip=10.1.2.0/24', ['/boom', '/missing']], ['remote_ip=2001:db8::/32', ['/old']],
    ['query=scanner', ['/missing']], ['level=error', ['/boom']], ['source=caddy_access&status=2xx&method=GET', ['/products']],
    [`from=${new Date(T0 + H).toISOString()}&to=${T0 + H + 5}`, ['/boom', '/missing']],
  ])('%s', async (q, expected) => {
    expect(await seeded(q)).toEqual(expected)
  })

  it('path=re: filters by regular expression', async () => {
    const rows = await api(`/api/logs?path=${encodeURIComponent('re:^/seed/(b|o)')}`)
    expect(rows.map((r: any) => r.path).sort()).toEqual(['/seed/boom', '/seed/old'])
  })

  it('stats are exact', async () => {
    const s = await api('/api/logs/stats?path=/seed/')
    expect(s).toMatchObject({ total: 5, by_status_class: { '2xx': 2, '3xx': 1, '4xx': 1, '5xx': 1 }, by_source: { caddy_access: 5 }, avg_duration_ms: 30, p95_duration_ms: 40 })
    expect(s.top_hosts).toEqual([{ host_domain: 'shop.example.test', count: 3 }, { host_domain: 'blog.example.test', count: 2 }])
    expect(s.top_paths).toHaveLength(5)
    // The same through the JS path (a regex filter) gives the same figures.
    const viaRegex = await api(`/api/logs/stats?path=${encodeURIComponent('re:^/seed/')}`)
    expect(viaRegex).toMatchObject({ total: 5, by_status_class: s.by_status_class, avg_duration_ms: 30, p95_duration_ms: 40 })
  })

  it('timeseries buckets are exact', async () => {
    const t = await api('/api/logs/timeseries?path=/seed/&bucket=hour')
    expect(t).toEqual([
      { ts: new Date(T0).toISOString(), total: 2, '2xx': 2, '3xx': 0, '4xx': 0, '5xx': 0 },
      { ts: new Date(T0 + H).toISOString(), total: 2, '2xx': 0, '3xx': 0, '4xx': 1, '5xx': 1 },
      { ts: new Date(T0 + 2 * H).toISOString(), total: 1, '2xx': 0, '3xx': 1, '4xx': 0, '5xx': 0 },
    ])
    expect((await api('/api/logs/timeseries?path=/seed/&bucket=day')).map((b: any) => b.total)).toEqual([5])
  })

  it.each([[`path=${encodeURIComponent('re:(a+)+b')}`], ['remote_ip=1.2.3.4/40'], ['status=6xx'], ['from=soon'], ['limit=5000'], ['bucket=week'], ['source=nope']])('%s is a 400', async (q) => {
    const path = q.startsWith('bucket') ? `/api/logs/timeseries?${q}` : `/api/logs?${q}`
    const res = await panel.request(path, { cookie })
    expect(res.status).toBe(400)
    expect(typeof res.json.error).toBe('string')
  })

  it('a regex filter over many rows answers within a bounded scan', async () => {
    const res = await fetch(`${panel.url}/api/logs?path=${encodeURIComponent('re:^/bulk/4999$')}`, { headers: { cookie }, signal: AbortSignal.timeout(10_000) })
    expect(res.status).toBe(200)
    expect((await res.json()).map((r: any) => r.path)).toEqual(['/bulk/4999'])
  })
})

describe('live tail', () => {
  it('streams a matching row within a second and not a non-matching one', async () => {
    const res = await fetch(`${panel.url}/api/logs/tail?status=418`, { headers: { cookie } })
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/)
    await new Promise((r) => setTimeout(r, 300))
    appendFileSync(access(), accessLine({ uri: '/tail-skip', status: 200 }) + accessLine({ uri: '/tail-teapot', status: 418 }))
    const text = await readSseUntil(res.body!, '/tail-teapot')
    expect(text).toMatch(/event: log/)
    expect(text).toContain('/tail-teapot')
    expect(text).not.toContain('/tail-skip')
    expect((await panel.request('/api/logs/tail?status=nope', { cookie })).status).toBe(400)
  })

  it('streams panel audit rows too, after their commit', async () => {
    const res = await fetch(`${panel.url}/api/logs/tail?source=audit&query=settings_update`, { headers: { cookie } })
    await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.retention_days': 31 } })
    const text = await readSseUntil(res.body!, 'settings_update')
    expect(text).toMatch(/"source":"audit"/)
    expect(text).toContain('settings_update')
  })
})

describe('retention', () => {
  it('removes rows past the retention age and beyond the cap, with an audit row', async () => {
    const db = panel.db()
    const old = Date.now() - 40 * 86_400_000
    for (let i = 0; i < 50; i++) await db.execute({ sql: "INSERT INTO logs (ts_ms, source, message) VALUES (?, 'caddy_access', 'old row')", args: [old] })
    await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.retention_days': 30, 'logs.max_entries': 1000 } })
    await panel.stop() // the sweep runs at every start
    panel = await startPanel({ dataDir: panel.dataDir, env: { PROXY_LOG_DIR: logDir } })
    cookie = await panel.login()
    const audit = await eventually(() => panel.db().execute("SELECT raw FROM logs WHERE message = 'logs_prune' ORDER BY id DESC LIMIT 1"), (r) => r.rows.length > 0 && JSON.parse(String(r.rows[0]!.raw)).removed_by_age > 0, 10_000, 200)
    const details = JSON.parse(String(audit.rows[0]!.raw))
    expect(details.removed_by_age).toBe(50)
    expect(details.removed_by_count).toBeGreaterThan(4000)
    expect(Number((await panel.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'old row'")).rows[0]!.n)).toBe(0)
    expect(Number((await panel.db().execute('SELECT count(*) AS n FROM logs')).rows[0]!.n)).toBeLessThanOrEqual(1010)
  })
})
