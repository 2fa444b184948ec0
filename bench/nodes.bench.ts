import { afterAll, beforeAll, expect, it } from 'vitest'
import { startCaddy, type CaddyHandle } from '../tests/support/caddy'
import { eventually } from '../tests/support/http'
import { startProxyStack, type ProxyStack } from '../tests/support/proxy-stack'
import { ratioOf, reportFigures } from './report'

// Issue 24 item 6: a change to a panel with 10,000 hosts rolled out to three
// production Caddy nodes, against the same change pushed to one node (goal: at
// most three times as long). The time is the whole host update as the operator
// sees it: build, the transaction, and the roll (for each node past the canary,
// a read of what it holds, then /load).
const HOSTS = 10_000
const ROUNDS = 3

let stack: ProxyStack
const nodes: CaddyHandle[] = []
let groupId: number
let hostId: number
let round = 0

const api = (path: string, method = 'GET', body?: unknown) => stack.panel.request(path, { method, body, cookie: stack.admin })

beforeAll(async () => {
  stack = await startProxyStack()
  groupId = (await api('/api/target-groups', 'POST', { name: 'bench', targets: [{ address: '127.0.0.1:9' }] })).json.id
  const first = await api('/api/hosts', 'POST', { domain: 'h1.bench.test', target_group_id: groupId, tls_mode: 'none' })
  expect(first.status, first.text).toBe(201)
  hostId = first.json.id
  // The other hosts as copies of the first one, written in SQL (10,000 API calls would each push).
  const db = stack.panel.db()
  const cols = (await db.execute('PRAGMA table_info(hosts)')).rows.map((r) => String(r.name)).filter((c) => c !== 'id' && c !== 'domain')
  await db.execute(`WITH RECURSIVE s(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM s WHERE i < ${HOSTS})
    INSERT INTO hosts (domain, ${cols.join(', ')}) SELECT 'h' || i || '.bench.test', ${cols.join(', ')} FROM s, hosts WHERE hosts.id = ${hostId}`)
  await db.execute("INSERT INTO host_names (name, host_id) SELECT domain, id FROM hosts WHERE domain != 'h1.bench.test'")
}, 300_000)
afterAll(async () => {
  await stack?.stop()
  for (const n of nodes) await n.stop()
})

/** One host update (a new alias each time, so every node gets a new configuration); its duration in ms. */
async function timedChange(): Promise<number> {
  round++
  const t0 = performance.now()
  const res = await api(`/api/hosts/${hostId}`, 'PUT', {
    domain: 'h1.bench.test',
    aliases: [`round${round}.bench.test`],
    target_group_id: groupId,
    tls_mode: 'none',
  })
  const ms = performance.now() - t0
  expect(res.status, res.text).toBe(200)
  expect(res.json.reconcile).toMatchObject({ status: 'applied' })
  return ms
}

async function median(): Promise<number> {
  await timedChange() // warm-up: the first push of 10,000 hosts to every node
  const samples: number[] = []
  for (let i = 0; i < ROUNDS; i++) samples.push(await timedChange())
  return samples.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!
}

it(`rolls a change of ${HOSTS} hosts out to three nodes`, async () => {
  const single = await median()
  for (const name of ['node-2', 'node-3']) {
    const caddy = await startCaddy()
    nodes.push(caddy)
    const res = await api('/api/nodes', 'POST', { name, admin_url: caddy.adminUrl })
    expect(res.status, res.text).toBe(201)
  }
  await eventually(
    async () => (await api('/api/nodes')).json as Array<{ status: { in_sync: boolean | null } }>,
    (list) => list.every((n) => n.status.in_sync === true),
    120_000,
    500,
  )
  const three = await median()
  for (const n of nodes) expect(JSON.stringify(await n.getConfig())).toContain(`round${round}.bench.test`)
  reportFigures('nodes', [
    { what: `host update, ${HOSTS} hosts, one node`, value: Math.round(single), unit: 'ms', budget: '-', withinBudget: true },
    {
      what: `host update, ${HOSTS} hosts, rolled out to three nodes`,
      value: Math.round(three),
      unit: 'ms',
      budget: '-',
      withinBudget: true,
      ratio: ratioOf(three, single, `one node, ${Math.round(single)} ms`, '<= 3'),
    },
  ])
})
