import { once } from 'node:events'
import { appendFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually, readSseUntil } from '../support/http'
import { makeTempDir } from '../support/processes'
import { startPanel, type PanelHandle } from '../support/panel'

// The built panel ingesting log files that the test writes itself into PROXY_LOG_DIR
// (the formats of proxy-and-engine.md A2 and A7), then answering the log API.
// logs.caddy.test.ts does the same with the real Caddy writing the files.

const T0 = Date.parse('2026-11-20T10:00:00Z')
const H = 3_600_000
interface Line {
  ts?: number
  host?: string
  hostId?: number
  rule?: number
  status?: number
  method?: string
  uri?: string
  ip?: string
  ua?: string
  dur?: number
}
function accessLine(l: Line): string {
  return `${JSON.stringify({
    level: (l.status ?? 200) >= 500 ? 'error' : 'info',
    ts: (l.ts ?? T0) / 1000,
    logger: `http.log.access${l.hostId ? `.host_${l.hostId}` : ''}`,
    msg: 'handled request',
    request: {
      remote_ip: l.ip ?? '192.0.2.1',
      remote_port: '1',
      proto: 'HTTP/1.1',
      method: l.method ?? 'GET',
      host: l.host ?? 'a.example.test',
      uri: l.uri ?? '/',
      headers: { 'User-Agent': [l.ua ?? 'curl/8'] },
    },
    duration: (l.dur ?? 10) / 1000,
    size: 1,
    status: l.status ?? 200,
    resp_headers: l.rule ? { 'X-Panel-Rule-Id': [String(l.rule)] } : {},
  })}\n`
}
function errorLine(uri: string, status = 502, ts = T0): string {
  return `${JSON.stringify({
    level: status >= 500 ? 'error' : 'debug',
    ts: ts / 1000,
    logger: 'http.log.error',
    msg: 'dial tcp 127.0.0.1:9: connect: connection refused',
    request: { remote_ip: '192.0.2.9', method: 'GET', host: 'a.example.test', uri },
    duration: 0.002,
    status,
  })}\n`
}
function wafLine(uri: string, rule: number, severity: number, score: number, ts = T0): string {
  return `${JSON.stringify({
    transaction: {
      unix_timestamp: ts * 1e6,
      client_ip: '192.0.2.8',
      server_id: 'waf.example.test',
      request: { method: 'GET', uri, headers: { 'user-agent': ['sqlmap/1.8'] } },
      response: { status: 403 },
      is_interrupted: true,
    },
    messages: [
      { message: `Inbound Anomaly Score Exceeded (Total Score: ${score})`, data: { id: 949110, severity: -1 } },
      { message: 'attack', data: { id: rule, severity, msg: `rule ${rule}` } },
    ],
  })}\n`
}

/**
 * Reads an SSE body until `needle` appears or the time is up. (One read stays
 * pending across waits: a read abandoned on a timeout would swallow its chunk.)
 */
let panel: PanelHandle
let cookie: string
let logDir: string
const file = (name: string) => join(logDir, name)
const access = () => file('access.log')
const api = async (path: string) => (await panel.request(path, { cookie })).json
// Audit rows share the table: counts here are of ingested rows only.
const INGESTED = 'source=caddy_access,caddy_error,waf_audit'
const count = async (q = '') => (await api(`/api/logs/stats?${INGESTED}${q.replace(/^\?/, '&')}`)).total as number
const restart = async (signal: NodeJS.Signals = 'SIGTERM') => {
  if (signal === 'SIGTERM') await panel.stop()
  else await panel.kill(signal)
  panel = await startPanel({ dataDir: panel.dataDir, env: { PROXY_LOG_DIR: logDir } })
  cookie = await panel.login()
}

beforeAll(async () => {
  logDir = makeTempDir('logs-')
  panel = await startPanel({ env: { PROXY_LOG_DIR: logDir } })
  cookie = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
})

describe('ingestion from files', () => {
  it('ingests access, error and WAF lines, keeps malformed ones, and waits for a partial line to finish', async () => {
    writeFileSync(access(), `${accessLine({ uri: '/first' })}this is not json\n${accessLine({ uri: '/partial' }).trimEnd()}`)
    writeFileSync(file('error.log'), errorLine('/x'))
    writeFileSync(file('waf-audit.log'), wafLine('/?q=1', 942100, 2, 8))
    await eventually(
      () => count(),
      (n) => n === 4,
      5_000,
      100,
    )
    const rows = await api(`/api/logs?limit=10&${INGESTED}`)
    expect(rows.map((r: any) => r.source).sort()).toEqual(['caddy_access', 'caddy_access', 'caddy_error', 'waf_audit'])
    expect(rows.find((r: any) => r.raw === 'this is not json')).toMatchObject({ level: 'error', message: 'unparsed log line: not JSON' })
    expect(rows.find((r: any) => r.source === 'waf_audit')).toMatchObject({
      waf_rule_id: 942100,
      waf_severity: 'CRITICAL',
      waf_anomaly_score: 8,
      status: 403,
      host_domain: 'waf.example.test',
      user_agent: 'sqlmap/1.8',
    })
    expect(rows.find((r: any) => r.source === 'caddy_error')).toMatchObject({
      status: 502,
      level: 'error',
      path: '/x',
      message: expect.stringMatching(/connection refused/),
      duration: 2,
    })
    expect(rows.find((r: any) => r.path === '/first')).toMatchObject({
      ts: new Date(T0).toISOString(),
      method: 'GET',
      remote_ip: '192.0.2.1',
      user_agent: 'curl/8',
      duration: 10,
      country: null,
    })
    appendFileSync(access(), '\n')
    await eventually(
      () => count(),
      (n) => n === 5,
      5_000,
      100,
    )
    expect((await api('/api/logs?path=/partial')).length).toBe(1)
    expect(await api(`/api/logs/${rows[0].id}`)).toEqual(rows[0])
    expect((await panel.request('/api/logs/999999', { cookie })).status).toBe(404)
  })

  it('stores a 1.5 MiB line truncated and an invalid UTF-8 line, and carries on', async () => {
    appendFileSync(access(), `${'y'.repeat(1_500_000)}\n`)
    appendFileSync(
      access(),
      Buffer.concat([Buffer.from('{"request":{"uri":"/bad-utf8-'), Buffer.from([0xff, 0xfe]), Buffer.from('"},"status":200}\n')]),
    )
    appendFileSync(access(), accessLine({ uri: '/after-bad' }))
    await eventually(
      () => api('/api/logs?path=/after-bad'),
      (r) => r.length === 1,
      5_000,
      100,
    )
    const big = (await api('/api/logs?level=error&limit=5')).filter((r: any) => r.raw?.startsWith('yyy'))
    expect(big).toHaveLength(1) // one row for the whole line, not one per chunk
    expect(big[0].raw.length).toBeLessThan(70_000)
    expect((await api('/api/logs?path=/bad-utf8-'))[0].path).toBe('/bad-utf8-\uFFFD\uFFFD')
  })

  it('survives rotation and truncation', async () => {
    const before = await count()
    renameSync(access(), `${access()}.1`)
    writeFileSync(access(), accessLine({ uri: '/rotated' }))
    await eventually(
      () => api('/api/logs?path=/rotated'),
      (r) => r.length === 1,
      5_000,
      100,
    )
    truncateSync(access(), 0)
    appendFileSync(access(), accessLine({ uri: '/truncated' }))
    await eventually(
      () => api('/api/logs?path=/truncated'),
      (r) => r.length === 1,
      5_000,
      100,
    )
    await new Promise((r) => setTimeout(r, 400))
    expect(await count()).toBe(before + 2)
  })

  it("rotation and truncation while the panel is down: the rotated file's rest and the new lines, nothing twice", async () => {
    await panel.kill('SIGKILL')
    const before = { rest: accessLine({ uri: '/down/rest-of-old' }), fresh: accessLine({ uri: '/down/new-file' }) }
    appendFileSync(access(), before.rest) // written before the rotation, never read
    renameSync(access(), file('access-2026-11-22T10-00-00.000.log'))
    writeFileSync(access(), before.fresh)
    // error.log truncated and rewritten past its old offset, with the same first bytes
    truncateSync(file('error.log'), 0)
    appendFileSync(file('error.log'), errorLine('/x-longer-path-after-truncation') + errorLine('/y') + errorLine('/z'))
    await restart('SIGKILL')
    await eventually(
      () => api('/api/logs?path=/down/'),
      (r) => r.length === 2,
      5_000,
      100,
    )
    await eventually(
      () => api('/api/logs?source=caddy_error'),
      (r) => r.length === 4,
      5_000,
      100,
    )
    const errors = await api('/api/logs?source=caddy_error')
    expect(errors.map((r: any) => r.path)).toEqual(['/z', '/y', '/x-longer-path-after-truncation', '/x'])
    expect((await api('/api/logs?level=error&query=unparsed')).filter((r: any) => r.source === 'caddy_error')).toEqual([])
  })

  it('a panel killed in the middle of a file neither loses nor duplicates rows', async () => {
    const before = await count()
    const lines = Array.from({ length: 5000 }, (_, i) => accessLine({ uri: `/bulk/${i}` })).join('')
    await panel.kill('SIGKILL')
    appendFileSync(access(), lines)
    panel = await startPanel({ dataDir: panel.dataDir, env: { PROXY_LOG_DIR: logDir } })
    cookie = await panel.login()
    await eventually(
      () => count(),
      (n) => n > before,
      10_000,
      20,
    )
    await restart('SIGKILL') // mid-file
    await eventually(
      () => count('?path=/bulk/'),
      (n) => n >= 5000,
      20_000,
      100,
    )
    await new Promise((r) => setTimeout(r, 500))
    expect(await count('?path=/bulk/')).toBe(5000)
    const distinct = await panel.db().execute("SELECT count(DISTINCT path) AS n FROM logs WHERE path LIKE '/bulk/%'")
    expect(Number(distinct.rows[0]!.n)).toBe(5000)
  })
})

describe('filters, stats and timeseries on known rows', () => {
  beforeAll(async () => {
    const seed = [
      { ts: T0, host: 'shop.example.test', hostId: 1, status: 200, method: 'GET', uri: '/products', ip: '198.51.100.5', dur: 10 },
      {
        ts: T0 + 1000,
        host: 'shop.example.test',
        hostId: 1,
        rule: 4,
        status: 201,
        method: 'POST',
        uri: '/api/cart?item=3',
        ip: '198.51.100.6',
        dur: 20,
      },
      {
        ts: T0 + H,
        host: 'shop.example.test',
        hostId: 1,
        status: 404,
        method: 'GET',
        uri: '/missing',
        ip: '10.1.2.3',
        dur: 30,
        ua: 'scanner/1.0',
      },
      { ts: T0 + H + 5, host: 'blog.example.test', hostId: 2, status: 500, method: 'GET', uri: '/boom', ip: '10.1.2.4', dur: 40 },
      { ts: T0 + 2 * H, host: 'blog.example.test', hostId: 2, status: 302, method: 'GET', uri: '/old', ip: '2001:db8::7', dur: 50 },
    ]
    appendFileSync(access(), seed.map((l) => accessLine({ ...l, uri: `/seed${l.uri}` })).join(''))
    appendFileSync(
      file('waf-audit.log'),
      wafLine('/seed/waf-sqli', 942100, 2, 10, T0 + 30_000) + wafLine('/seed/waf-xss', 941100, 4, 5, T0 + 40_000),
    )
    await eventually(
      () => count('?path=/seed/'),
      (n) => n === 7,
      5_000,
      100,
    )
  })
  const seeded = (q: string) => api(`/api/logs?path=/seed/&${q}`).then((rows) => rows.map((r: any) => r.path.replace('/seed', '')).sort())
  const ALL_ACCESS = ['/api/cart?item=3', '/boom', '/missing', '/old', '/products']

  it.each([
    ['source=caddy_access', ALL_ACCESS],
    ['source=waf_audit', ['/waf-sqli', '/waf-xss']],
    ['source=audit', []],
    ['status=4xx', ['/missing', '/waf-sqli', '/waf-xss']],
    ['status=500-504', ['/boom']],
    ['status=200,302', ['/old', '/products']],
    ['status=403', ['/waf-sqli', '/waf-xss']],
    ['method=POST', ['/api/cart?item=3']],
    ['method=get&source=caddy_access', ['/boom', '/missing', '/old', '/products']],
    ['host_id=2', ['/boom', '/old']],
    ['host_domain=shop.example.test', ['/api/cart?item=3', '/missing', '/products']],
    ['host_id=2&host_domain=shop.example.test', ALL_ACCESS],
    ['host_domain=waf.example.test', ['/waf-sqli', '/waf-xss']],
    ['rule_id=4', ['/api/cart?item=3']],
    ['remote_ip=198.51.100', ['/api/cart?item=3', '/products']],
    ['remote_ip=10.1.2.0/24', ['/boom', '/missing']],
    ['remote_ip=2001:db8::/32', ['/old']],
    ['remote_ip=192.0.2.8/32', ['/waf-sqli', '/waf-xss']],
    ['query=scanner', ['/missing']],
    ['query=sqlmap', ['/waf-sqli', '/waf-xss']],
    ['level=error', ['/boom']],
    ['level=warn', ['/waf-sqli', '/waf-xss']],
    ['waf_rule_id=942100', ['/waf-sqli']],
    ['waf_rule_id=942100,941100', ['/waf-sqli', '/waf-xss']],
    ['waf_severity=critical', ['/waf-sqli']],
    ['waf_severity=WARNING', ['/waf-xss']],
    ['source=caddy_access&status=2xx&method=GET', ['/products']],
    ['host_id=1&status=2xx&remote_ip=198.51.100.0/24&method=POST', ['/api/cart?item=3']],
    ['source=waf_audit&waf_severity=CRITICAL&query=sqlmap&status=4xx', ['/waf-sqli']],
    [`from=${new Date(T0 + H).toISOString()}&to=${T0 + H + 5}`, ['/boom', '/missing']],
    [`from=${T0 + 30_000}&to=${T0 + 40_000}`, ['/waf-sqli', '/waf-xss']],
    [`to=${T0 + 1000}&host_id=1`, ['/api/cart?item=3', '/products']],
  ])('%s', async (q, expected) => {
    expect(await seeded(q)).toEqual(expected)
  })

  it('path=re: filters by regular expression, alone and with other filters', async () => {
    expect((await panel.request(`/api/logs?path=/seed/&path=${encodeURIComponent('re:^/seed/')}`, { cookie })).status).toBe(400) // given twice
    const rows = await api(`/api/logs?path=${encodeURIComponent('re:^/seed/(b|o)')}`)
    expect(rows.map((r: any) => r.path).sort()).toEqual(['/seed/boom', '/seed/old'])
    const combined = await api(`/api/logs?path=${encodeURIComponent('re:^/seed/[a-z]+$')}&status=5xx`)
    expect(combined.map((r: any) => r.path)).toEqual(['/seed/boom'])
  })

  it('stats are exact', async () => {
    const s = await api('/api/logs/stats?path=/seed/&source=caddy_access')
    expect(s).toEqual({
      total: 5,
      by_status_class: { '2xx': 2, '3xx': 1, '4xx': 1, '5xx': 1 },
      by_source: { caddy_access: 5 },
      avg_duration_ms: 30,
      p95_duration_ms: 40,
      top_hosts: [
        { host_domain: 'shop.example.test', count: 3 },
        { host_domain: 'blog.example.test', count: 2 },
      ],
      top_paths: [
        { path: '/seed/api/cart', count: 1 },
        { path: '/seed/boom', count: 1 },
        { path: '/seed/missing', count: 1 },
        { path: '/seed/old', count: 1 },
        { path: '/seed/products', count: 1 },
      ],
    })
    // The same through the JS path (a regex filter) gives the same figures.
    expect(await api(`/api/logs/stats?path=${encodeURIComponent('re:^/seed/')}&source=caddy_access`)).toEqual(s)
    const withWaf = await api('/api/logs/stats?path=/seed/')
    expect(withWaf).toMatchObject({
      total: 7,
      by_status_class: { '2xx': 2, '3xx': 1, '4xx': 3, '5xx': 1 },
      by_source: { caddy_access: 5, waf_audit: 2 },
      avg_duration_ms: 30,
      p95_duration_ms: 40,
    })
    expect(withWaf.top_hosts[0]).toEqual({ host_domain: 'shop.example.test', count: 3 })
  })

  it('the free-text index is built by the loop, emptied when the setting is off, rebuilt when on, and answers the same', async () => {
    const mark = async () => {
      const r = await panel
        .db()
        .execute(
          'SELECT text_last_id AS t, (SELECT max(id) FROM logs) AS m, (SELECT count(*) FROM logs_text_fts) AS n FROM logs_rollup_state',
        )
      return { textLastId: Number(r.rows[0]!.t), maxId: Number(r.rows[0]!.m), indexed: Number(r.rows[0]!.n) }
    }
    const answers = async () => ({
      rows: await seeded('query=sqlmap'),
      stats: await api('/api/logs/stats?path=/seed/&query=scanner%2F1'),
      series: await api(`/api/logs/timeseries?path=/seed/&query=sqlmap&bucket=hour&from=${T0}`),
    })
    // Built in the background: every row up to the newest at some point, the seeded ones included.
    const built = await eventually(mark, (m) => m.textLastId > 0 && m.indexed > 0, 10_000, 100)
    const indexed = await answers()
    expect(indexed.rows).toEqual(['/waf-sqli', '/waf-xss'])
    expect(indexed.stats).toMatchObject({ total: 1, by_status_class: { '4xx': 1 }, top_paths: [{ path: '/seed/missing', count: 1 }] })
    expect(indexed.series).toEqual([{ ts: new Date(T0).toISOString(), total: 2, '2xx': 0, '3xx': 0, '4xx': 2, '5xx': 0 }])
    expect(built.indexed).toBeLessThanOrEqual(built.textLastId)

    const off = await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.text_index': false } })
    expect(off.status).toBe(200)
    await eventually(mark, (m) => m.textLastId === 0 && m.indexed === 0, 10_000, 100)
    expect(await answers()).toEqual(indexed)

    expect((await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.text_index': true } })).status).toBe(200)
    await eventually(mark, (m) => m.textLastId >= built.textLastId && m.indexed > 0, 10_000, 100)
    expect(await answers()).toEqual(indexed)
    const bad = await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.text_index': 'yes' } })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/logs\.text_index/)
  })

  it('timeseries buckets are exact', async () => {
    const t = await api('/api/logs/timeseries?path=/seed/&bucket=hour')
    expect(t).toEqual([
      { ts: new Date(T0).toISOString(), total: 4, '2xx': 2, '3xx': 0, '4xx': 2, '5xx': 0 },
      { ts: new Date(T0 + H).toISOString(), total: 2, '2xx': 0, '3xx': 0, '4xx': 1, '5xx': 1 },
      { ts: new Date(T0 + 2 * H).toISOString(), total: 1, '2xx': 0, '3xx': 1, '4xx': 0, '5xx': 0 },
    ])
    expect(await api('/api/logs/timeseries?path=/seed/&bucket=day')).toEqual([
      { ts: '2026-11-20T00:00:00.000Z', total: 7, '2xx': 2, '3xx': 1, '4xx': 3, '5xx': 1 },
    ])
    expect((await api('/api/logs/timeseries?path=/seed/&bucket=minute')).map((b: any) => [b.ts.slice(11, 16), b.total])).toEqual([
      ['10:00', 4],
      ['11:00', 2],
      ['12:00', 1],
    ])
    // Rolled up or not, the whole table's answer is the same as the sum of its parts (default bucket: hour).
    const all = await api('/api/logs/timeseries')
    expect(all.reduce((s: number, b: any) => s + b.total, 0)).toBe((await api('/api/logs/stats')).total)
  })

  it.each([
    [`path=${encodeURIComponent('re:(a)\\1')}`],
    [`path=${encodeURIComponent('re:(')}`],
    ['remote_ip=1.2.3.4/40'],
    ['remote_ip=not-an-ip/8'],
    ['status=6xx'],
    ['status=abc'],
    ['from=soon'],
    ['to=2026-02-30T25:00:00Z'],
    ['limit=5000'],
    ['limit=0'],
    ['before_id=x'],
    ['bucket=week'],
    ['source=nope'],
    ['host_id=-1'],
    ['waf_rule_id=1.5'],
  ])('%s is a 400 with {error}', async (q) => {
    const path = q.startsWith('bucket') ? `/api/logs/timeseries?${q}` : `/api/logs?${q}`
    const res = await panel.request(path, { cookie })
    expect(res.status).toBe(400)
    expect(res.json).toEqual({ error: expect.any(String) })
  })

  it('a pathological regular expression does not stall the server', async () => {
    appendFileSync(access(), Array.from({ length: 200 }, (_, i) => accessLine({ uri: `/${'a'.repeat(3000)}${i}!` })).join(''))
    await eventually(
      () => count('?query=aaaaaaaaaa'),
      (n) => n === 200,
      5_000,
      100,
    )
    // A backtracking engine would not finish on these rows: the 5 s abort fails it.
    const res = await fetch(`${panel.url}/api/logs/stats?path=${encodeURIComponent('re:^/(a+)+$')}`, {
      headers: { cookie },
      signal: AbortSignal.timeout(5_000),
    })
    expect(res.status).toBe(200)
    expect((await res.json()).total).toBe(0)
    // Meanwhile the server answers other requests.
    expect((await panel.request('/healthz')).status).toBe(200)
  })

  it('a regex filter over many rows answers within a bounded scan', async () => {
    const res = await fetch(`${panel.url}/api/logs?path=${encodeURIComponent('re:^/bulk/4999$')}`, {
      headers: { cookie },
      signal: AbortSignal.timeout(10_000),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-logs-scan-limited')).toBeNull()
    expect((await res.json()).map((r: any) => r.path)).toEqual(['/bulk/4999'])
  })
})

describe('live tail', () => {
  // How fast a row reaches the tail is measured in bench/, not asserted here.
  it('streams a matching row and not a non-matching one', async () => {
    const res = await fetch(`${panel.url}/api/logs/tail?status=418&host_id=9`, { headers: { cookie } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/)
    // No wait: the route subscribes before it sends the headers fetch has just read.
    appendFileSync(
      access(),
      accessLine({ uri: '/tail-skip', status: 200, hostId: 9 }) +
        accessLine({ uri: '/tail-other-host', status: 418, hostId: 8 }) +
        accessLine({ uri: '/tail-teapot', status: 418, hostId: 9 }),
    )
    const text = await readSseUntil(res.body!, '/tail-teapot')
    expect(text).toMatch(/^: connected\n\n/)
    expect(text).toMatch(/event: log\ndata: \{"id":\d+,.*"path":"\/tail-teapot"/)
    expect(text).not.toContain('/tail-skip')
    expect(text).not.toContain('/tail-other-host')
    expect((await panel.request('/api/logs/tail?status=nope', { cookie })).status).toBe(400)
    expect((await panel.request('/api/logs/tail')).status).toBe(401)
  })

  it('streams panel audit rows too, after their commit', async () => {
    const res = await fetch(`${panel.url}/api/logs/tail?source=audit&query=settings_update`, { headers: { cookie } })
    await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.retention_days': 31 } })
    const text = await readSseUntil(res.body!, 'settings_update')
    expect(text).toMatch(/"source":"audit"/)
    expect(text).toContain('settings_update')
  })

  it('drops a client that does not read, and keeps serving the others', async () => {
    const socket = connect(panel.port, '127.0.0.1')
    await new Promise((r) => socket.once('connect', r))
    socket.write(`GET /api/logs/tail?path=/flood/ HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n\r\n`)
    socket.pause() // never reads: the server's buffers fill up
    const closed = new Promise<void>((r) => socket.once('close', () => r()))
    socket.on('error', () => {})
    // The first bytes of the answer (headers, ": connected") say the server has subscribed this
    // client; they stay unread in the socket's buffer ('readable' does not consume).
    await once(socket, 'readable')
    const reader = await fetch(`${panel.url}/api/logs/tail?path=/flood/999`, { headers: { cookie } }) // a healthy subscriber
    const ua = 'u'.repeat(1000)
    for (let k = 0; k < 4; k++)
      appendFileSync(access(), Array.from({ length: 5000 }, (_, i) => accessLine({ uri: `/flood/${k * 5000 + i}`, ua })).join(''))
    expect(await readSseUntil(reader.body!, '/flood/9999', 20_000)).toContain('/flood/999')
    await eventually(
      () => count('?path=/flood/'),
      (n) => n === 20_000,
      20_000,
      200,
    )
    // The slow client was cut off: draining its socket ends with the server closing it.
    let received = 0
    socket.on('data', (d) => {
      received += d.length
    })
    socket.resume()
    await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('the slow client was never dropped')), 10_000))])
    expect(received).toBeLessThan(20_000 * 2_000) // far from the whole flood
    expect((await panel.request('/healthz')).status).toBe(200)
  })
})

describe('retention', () => {
  it('removes rows past the retention age and beyond the cap, with an audit row', async () => {
    const db = panel.db()
    const old = Date.now() - 40 * 86_400_000
    for (let i = 0; i < 50; i++)
      await db.execute({ sql: "INSERT INTO logs (ts_ms, source, message) VALUES (?, 'caddy_access', 'old row')", args: [old] })
    await panel.request('/api/settings', { method: 'PUT', cookie, body: { 'logs.retention_days': 30, 'logs.max_entries': 1000 } })
    const total = Number((await db.execute('SELECT count(*) AS n FROM logs')).rows[0]!.n)
    await restart() // the sweep runs at every start
    const audit = await eventually(
      () => panel.db().execute("SELECT id, raw FROM logs WHERE message = 'logs_prune' ORDER BY id DESC LIMIT 1"),
      (r) => r.rows.length > 0 && JSON.parse(String(r.rows[0]!.raw)).removed_by_age > 0,
      10_000,
      200,
    )
    const details = JSON.parse(String(audit.rows[0]!.raw))
    expect(details).toMatchObject({ removed_by_age: 50, retention_days: 30, max_entries: 1000, actor: 'system:logs-prune' })
    // Rows written between the count above and the sweep: the shutdown and boot audit rows, at most a few.
    expect(details.removed_by_count).toBeGreaterThanOrEqual(total - 50 - 1000)
    expect(details.removed_by_count).toBeLessThanOrEqual(total - 50 - 1000 + 10)
    expect(Number((await panel.db().execute("SELECT count(*) AS n FROM logs WHERE message = 'old row'")).rows[0]!.n)).toBe(0)
    // The cap was left when the sweep finished; boot work may add its own audit rows before the sweep's row.
    const kept = Number(
      (await panel.db().execute({ sql: 'SELECT count(*) AS n FROM logs WHERE id < ?', args: [Number(audit.rows[0]!.id)] })).rows[0]!.n,
    )
    expect(kept).toBeGreaterThanOrEqual(1000)
    expect(kept).toBeLessThanOrEqual(1005)
    // And stats agree with the table (the roll-ups lost what was deleted).
    const stats = await api('/api/logs/stats')
    expect(stats.total).toBe(Number((await panel.db().execute('SELECT count(*) AS n FROM logs')).rows[0]!.n))
  })
})
