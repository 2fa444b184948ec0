import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { makeTempDir } from '../tests/support/processes'
import { startPanel, type PanelHandle } from '../tests/support/panel'
import { reportFigures, type Figure } from './report'

// Budgets (design.md): ingestion >= 30,000 rows/s; on 1,000,000 rows /api/logs p95 <= 50 ms,
// stats and 24 h timeseries <= 300 ms; SSE subscribers served within 1 s.
let panel: PanelHandle
let cookie: string
let logDir: string
const line = (i: number, now: number) => JSON.stringify({ level: 'info', ts: (now - (i % 86_400) * 1000) / 1000, logger: `http.log.access.host_${1 + (i % 20)}`, msg: 'handled request',
  request: { remote_ip: `198.51.${(i >> 8) & 255}.${i & 255}`, method: i % 5 ? 'GET' : 'POST', host: `h${1 + (i % 20)}.example.test`, uri: `/api/item/${i % 997}`, headers: { 'User-Agent': ['bench/1.0'] } },
  duration: (i % 50) / 1000, status: [200, 200, 200, 301, 404, 500][i % 6] }) + '\n'

beforeAll(async () => {
  logDir = makeTempDir('bench-logs-')
  panel = await startPanel({ env: { PROXY_LOG_DIR: logDir } })
  cookie = await panel.login()
})
afterAll(async () => { await panel?.stop() })

const total = async () => Number((await panel.db().execute("SELECT count(*) AS n FROM logs WHERE source = 'caddy_access'")).rows[0]!.n)
async function p95(path: string, runs = 20) {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    const res = await panel.request(path, { cookie })
    expect(res.status).toBe(200)
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(0.95 * (runs - 1))]!
}

it('ingests, queries 1,000,000 rows and tails', async () => {
  const figures: Figure[] = []
  const now = Date.now()
  const COUNT = 100_000
  let text = ''
  for (let i = 0; i < COUNT; i++) text += line(i, now)
  const t0 = performance.now()
  appendFileSync(join(logDir, 'access.log'), text)
  while ((await total()) < COUNT) await new Promise((r) => setTimeout(r, 20))
  const rate = COUNT / ((performance.now() - t0) / 1000)
  figures.push({ what: `ingestion from the file, ${COUNT} lines, parsing included`, value: Math.round(rate), unit: 'rows/s', budget: '>= 30000', withinBudget: rate >= 30_000 })

  // Grow the table to 1,000,000 rows by copying the ingested ones (with shifted ids and times).
  const db = panel.db()
  for (let k = 1; k < 10; k++) {
    await db.execute(`INSERT INTO logs (ts_ms, source, host_id, host_domain, status, method, path, remote_ip, user_agent, level, message, raw, duration_ms, country)
      SELECT ts_ms - ${k} * 1000, source, host_id, host_domain, status, method, path, remote_ip, user_agent, level, message, raw, duration_ms, country FROM logs WHERE source = 'caddy_access' AND id <= ${COUNT + 200}`)
  }
  const rows = Number((await db.execute('SELECT count(*) AS n FROM logs')).rows[0]!.n)
  const q = [
    ['/api/logs?limit=100', 'list, no filter'],
    ['/api/logs?status=5xx&host_id=3&limit=100', 'list, status class + host'],
    ['/api/logs?path=/api/item/99&method=POST&limit=100', 'list, path substring + method'],
    [`/api/logs?source=caddy_access&from=${now - 3_600_000}&limit=100`, 'list, source + last hour'],
  ] as const
  for (const [path, what] of q) {
    const ms = await p95(path)
    figures.push({ what: `${what} (${rows} rows), p95`, value: Number(ms.toFixed(1)), unit: 'ms', budget: '<= 50', withinBudget: ms <= 50 })
  }
  const stats = await p95(`/api/logs/stats?from=${now - 86_400_000}`, 5)
  figures.push({ what: 'stats, last 24 h', value: Math.round(stats), unit: 'ms', budget: '<= 300', withinBudget: stats <= 300 })
  const series = await p95(`/api/logs/timeseries?bucket=hour&from=${now - 86_400_000}`, 5)
  figures.push({ what: 'timeseries, 24 h hourly', value: Math.round(series), unit: 'ms', budget: '<= 300', withinBudget: series <= 300 })

  // Tail latency: 10 subscribers, one new line.
  const readers = await Promise.all(Array.from({ length: 10 }, async () => (await fetch(`${panel.url}/api/logs/tail?status=418`, { headers: { cookie } })).body!.getReader()))
  const t1 = performance.now()
  appendFileSync(join(logDir, 'access.log'), line(7, Date.now()).replace('"status":', '"status":418,"x":'))
  const latencies = await Promise.all(readers.map(async (r) => {
    let got = ''
    while (!got.includes('event: log')) { const { value, done } = await r.read(); if (done) break; got += new TextDecoder().decode(value) }
    await r.cancel()
    return performance.now() - t1
  }))
  const worst = Math.max(...latencies)
  figures.push({ what: 'tail: last of 10 subscribers served', value: Math.round(worst), unit: 'ms', budget: '<= 1000', withinBudget: worst <= 1000 })
  reportFigures('logs', figures)
})
