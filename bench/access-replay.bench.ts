import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { closeDatabase, getClient, openDatabase } from '../server/utils/core/db'
import { readMigrationsFromDir } from '../server/utils/core/migrations'
import { COUNTRIES_WITH_CONTINENT } from '../server/utils/access/continents'
import { previewBody, previewPolicy } from '../server/utils/access/replay'
import { makeTempDir } from '../tests/support/processes'
import { median, ratioOf, reportFigures, type Figure } from './report'

// Goal (issue 38, "Try before it applies"): the replay of a policy over 1,000,000 access rows
// answers in <= 1 s. Rows: 7 days, 20 hosts, ~50,000 distinct addresses (a skewed share each, 5 %
// IPv6), 200 countries, 2,000 AS numbers (one country and one AS per address, as ingestion
// records them), 5,000 paths, 1 % unplaced. Written by SQL straight into a migrated database;
// previewPolicy runs in this process on the panel's own code. The limit in the same run: the one
// grouped read of (address, country, AS) alone through its index, the floor of the method.
const ROWS = Number(process.env.BENCH_REPLAY_ROWS ?? 1_000_000)
// BENCH_REPLAY_DIR keeps the seeded database and reuses it on the next run (its rows' time is kept beside it).
const KEEP_DIR = process.env.BENCH_REPLAY_DIR
let NOW = Date.now()
const COUNTRIES = COUNTRIES_WITH_CONTINENT.filter((c) => /^[A-Z]{2}$/.test(c)).slice(0, 200)

beforeAll(async () => {
  const dir = KEEP_DIR ? join(KEEP_DIR, `rows-${ROWS}`) : makeTempDir('bench-replay-')
  mkdirSync(dir, { recursive: true })
  const reuse = existsSync(join(dir, 'now.txt'))
  if (reuse) NOW = Number(readFileSync(join(dir, 'now.txt'), 'utf8'))
  await openDatabase({
    url: `file:${join(dir, 'panel.db')}`,
    migrations: readMigrationsFromDir(new URL('../db/migrations', import.meta.url).pathname),
  })
  if (reuse) return
  const c = getClient()
  const t = performance.now()
  for (let start = 0; start < ROWS; start += 250_000) {
    const end = Math.min(ROWS, start + 250_000)
    // k: the address of row i, skewed (the product of two uniform draws favours small k).
    await c.execute({
      sql: `WITH RECURSIVE s(i) AS (SELECT ${start} UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ${end}),
        r AS (SELECT i, ((i * 2654435761) % 50000) * ((i * 40503 + 7) % 50000) / 50000 AS k FROM s)
        INSERT INTO logs (ts_ms, source, host_id, host_domain, status, method, path, remote_ip, country, asn, level)
        SELECT ${NOW} - (i % 604800) * 1000 - 1000, 'caddy_access', 1 + i % 20, 'h' || (1 + i % 20) || '.example.test', 200, 'GET',
          '/p/' || ((i * 7919) % 5000),
          CASE WHEN k % 20 = 0 THEN '2001:db8::' || printf('%x', k) ELSE '45.' || ((k >> 8) & 255) || '.' || (k & 255) || '.' || (1 + k % 250) END,
          CASE WHEN k % 100 = 1 THEN NULL ELSE json_extract(?, '$[' || (k % 200) || ']') END,
          CASE WHEN k % 100 = 1 THEN NULL ELSE 64512 + k % 2000 END, 'info'
        FROM r`,
      args: [JSON.stringify(COUNTRIES)],
    })
  }
  console.log(`seeded ${ROWS} rows in ${Math.round(performance.now() - t)} ms`)
  writeFileSync(join(dir, 'now.txt'), String(NOW))
}, 600_000)
afterAll(() => closeDatabase())

const caller = { userId: 1, currentIp: '127.0.0.1' }
async function timed(fn: () => Promise<unknown>): Promise<number> {
  await fn() // warm: the page cache and the statement cache
  const runs: number[] = []
  for (let i = 0; i < 3; i++) {
    const t = performance.now()
    await fn()
    runs.push(performance.now() - t)
  }
  return median(runs)
}

it('replays a policy over 1,000,000 access rows', async () => {
  const policies = {
    'country ban (one country refused)': { rules: [{ action: 'deny', countries: [COUNTRIES[0]] }], default: 'allow' },
    'allow 30 countries, deny the rest': { rules: [{ action: 'allow', countries: COUNTRIES.slice(0, 30) }], default: 'deny' },
    'ranges, AS numbers and continents': {
      rules: [
        { action: 'deny', cidrs: ['45.3.0.0/16', '2001:db8::/120'] },
        { action: 'deny', asns: Array.from({ length: 100 }, (_, i) => 64512 + i * 7) },
        { action: 'allow', continents: ['EU', 'NA'] },
      ],
      default: 'deny',
      unknown_address: 'deny',
    },
  }
  const limitMs = await timed(() =>
    getClient().execute({
      sql: "SELECT remote_ip, country, asn, count(*) AS n FROM logs INDEXED BY logs_access_client_idx WHERE source = 'caddy_access' AND ts_ms >= ? GROUP BY remote_ip, country, asn",
      args: [NOW - 7 * 86_400_000],
    }),
  )
  const figures: Figure[] = []
  for (const [what, policy] of Object.entries(policies)) {
    const body = previewBody.parse({ policy, days: 7 })
    const answer = await previewPolicy(body, caller, NOW)
    expect(answer.requests).toBe(ROWS)
    const ms = await timed(() => previewPolicy(body, caller, NOW))
    console.log(`${what}: ${Math.round(ms)} ms, refused ${answer.refused_requests} of ${answer.requests}`)
    figures.push({
      what: `replay, ${what} (${ROWS.toLocaleString('en')} rows, 7 days)`,
      value: Math.round(ms),
      unit: 'ms',
      budget: '<= 1000 ms',
      withinBudget: ms <= 1000,
      // The load-independent stand-in for the 1 s goal: quiet, the grouped read alone takes ~180 ms on the
      // 2-core machine, so 1 s is ~5.5 times it; a replay of a policy that refuses most clients reads twice.
      ratio: ratioOf(ms, limitMs, `the grouped read alone (${Math.round(limitMs)} ms)`, '<= 5'),
    })
  }
  reportFigures('access-replay', figures)
})
