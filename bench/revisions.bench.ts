import { performance } from 'node:perf_hooks'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startTestUpstream } from '../tests/support/upstream'
import { createGroup, startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { median, ratioOf, reportFigures, type Figure } from './report'

// What revisions and dry runs cost on a panel with 1,000 hosts and the
// production Caddy: a host toggle (build, push, revision recorded in the same
// transaction), the same toggle as a dry run (two builds and two desired states,
// nothing pushed), a diff of two revisions, and the stored size of a revision.
// The limit beside the toggle: the same configuration posted straight to /load.

const HOSTS = Number(process.env.BENCH_REVISION_HOSTS ?? 1000)
let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

async function timed(fn: () => Promise<{ status: number; text: string }>): Promise<number> {
  const t = performance.now()
  const r = await fn()
  const ms = performance.now() - t
  if (r.status >= 300) throw new Error(`unexpected ${r.status}: ${r.text}`)
  return ms
}

it(`toggles, dry-runs and diffs with ${HOSTS} hosts`, async () => {
  const group = await createGroup(stack, { name: 'bench', targets: [{ address: `127.0.0.1:${up.port}` }] })
  const db = stack.panel.db()
  const now = new Date().toISOString()
  const stmts = Array.from({ length: HOSTS }, (_, i) => [
    {
      sql: `INSERT INTO hosts (id, domain, aliases, target_group_id, tls_mode, tls_challenge, waf_families, created_at, updated_at) VALUES (?, ?, '[]', ?, 'none', 'http', '["sqli","xss"]', ?, ?)`,
      args: [i + 1, `h${i + 1}.bench.test`, group.id, now, now],
    },
    { sql: 'INSERT INTO host_names (name, host_id) VALUES (?, ?)', args: [`h${i + 1}.bench.test`, i + 1] },
  ]).flat()
  await db.batch(stmts, 'write')
  const cookie = stack.admin
  const toggle = (q = '') => stack.panel.request(`/api/hosts/1/toggle${q}`, { method: 'POST', cookie })
  await timed(() => toggle()) // first push of all hosts (and warm-up)
  await timed(() => toggle())

  const toggles: number[] = [],
    dryRuns: number[] = [],
    diffs: number[] = []
  for (let i = 0; i < 5; i++) toggles.push(await timed(() => toggle()))
  for (let i = 0; i < 5; i++) dryRuns.push(await timed(() => toggle('?dry_run=1')))
  const revs = (await stack.panel.request('/api/revisions', { cookie })).json as Array<{ id: number }>
  expect(revs.length).toBeGreaterThan(1)
  for (let i = 0; i < 5; i++)
    diffs.push(await timed(() => stack.panel.request(`/api/revisions/diff?from=${revs[1]!.id}&to=${revs[0]!.id}`, { cookie })))

  // The limit: Caddy loading the same configuration (one host name changed so it does not skip it).
  const held = JSON.stringify(await stack.caddy.getConfig())
  const loads: number[] = []
  for (let i = 0; i < 5; i++) {
    const t = performance.now()
    const r = await stack.caddy.load(JSON.parse(held.replace('h2.bench.test', `h2-${i}.bench.test`)))
    loads.push(performance.now() - t)
    expect(r.status).toBe(200)
  }
  await stack.caddy.load(JSON.parse(held))

  const size = (await db.execute('SELECT length(desired_state) AS d, length(config) AS c FROM config_revisions ORDER BY id DESC LIMIT 1'))
    .rows[0]!
  const figures: Figure[] = [
    {
      what: `host toggle with ${HOSTS} hosts (push + revision), median of 5`,
      value: Math.round(median(toggles)),
      unit: 'ms',
      budget: '-',
      withinBudget: true,
      ratio: ratioOf(median(toggles), median(loads), `the same JSON loaded straight into Caddy, ${Math.round(median(loads))} ms`, '<= 1.5'),
    },
    {
      what: `the same toggle with ?dry_run=1, median of 5`,
      value: Math.round(median(dryRuns)),
      unit: 'ms',
      budget: '-',
      withinBudget: true,
    },
    { what: 'diff of two revisions, median of 5', value: Math.round(median(diffs)), unit: 'ms', budget: '-', withinBudget: true },
    {
      what: `stored revision: configuration, gzipped (JSON ${(held.length / 1e6).toFixed(2)} MB)`,
      value: Math.round(Number(size.c) / 1024),
      unit: 'KiB',
      budget: '-',
      withinBudget: true,
    },
    {
      what: 'stored revision: desired state, gzipped',
      value: Math.round(Number(size.d) / 1024),
      unit: 'KiB',
      budget: '-',
      withinBudget: true,
    },
  ]
  reportFigures('revisions', figures)
})
