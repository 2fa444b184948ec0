import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { createNodeNamespaces, type NodeNamespace } from '../support/netns'
import { freePort } from '../support/ports'
import { eventually, httpRequest } from '../support/http'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Every node's logs (docs/scaling.md, issue 24 item 4), against three production
// Caddy processes, each in a network namespace of its own (a machine of its own,
// reached at its address; the same configuration listens on every address of its
// namespace). The test sends a known number of requests to each node and checks
// each row's node, and the rows against the file of the node that wrote them. The
// upstream listens on the host end of node 1's pair, which every namespace routes to.

const DOMAIN = 'logs.example.test'
const PROBE = '/?id=1%27%20OR%20%271%27=%271'
let up: Awaited<ReturnType<typeof startTestUpstream>>
let machines: Awaited<ReturnType<typeof createNodeNamespaces>>
let stack: ProxyStack
let second: CaddyHandle
let third: CaddyHandle
/** Node id -> name, node 1 included. */
const nodeNames = new Map<number, string>()
/** Node id -> its namespace's address, where it serves HTTP. */
const nodeAddress = new Map<number, string>()

async function logRows(query: string) {
  const res = await stack.panel.request(`/api/logs?limit=1000&host_domain=${DOMAIN}&${query}`, { cookie: stack.admin })
  expect(res.status, res.text).toBe(200)
  return res.json as Array<Record<string, any>>
}
/** `count` requests to each node, ids in order of `nodeIds()`, node k getting `counts[k]`; returns node id -> sent. */
async function sendRequests(prefix: string, counts: number[], path = (i: number) => `${prefix}${i}`): Promise<Map<number, number>> {
  const sent = new Map<number, number>()
  let i = 0
  for (const [k, id] of nodeIds().entries())
    for (let n = 0; n < counts[k]!; n++, i++) {
      const res = await httpRequest({ address: nodeAddress.get(id)!, port: stack.httpPort, host: DOMAIN, path: path(i) })
      expect(res.status).toBeLessThan(500)
      sent.set(id, (sent.get(id) ?? 0) + 1)
    }
  return sent
}
const nodeIds = () => [...nodeNames.keys()]
/** The lines of a node's log file that hold `needle`. */
function linesIn(nodeId: number, file: string, needle: string): number {
  const dir = nodeId === 1 ? stack.logDir : join(stack.logDir, 'nodes', String(nodeId))
  let text = ''
  try {
    text = readFileSync(join(dir, file), 'utf8')
  } catch {
    return 0
  }
  return text.split('\n').filter((l) => l.includes(needle)).length
}
function countByNode(rows: Array<Record<string, any>>): Map<number, number> {
  const out = new Map<number, number>()
  for (const r of rows) out.set(r.node_id, (out.get(r.node_id) ?? 0) + 1)
  return out
}

beforeAll(async () => {
  machines = await createNodeNamespaces(3)
  const [a, b, c] = machines.nodes as [NodeNamespace, NodeNamespace, NodeNamespace]
  up = await startTestUpstream({ host: a.hostAddress })
  const httpPort = await freePort()
  stack = await startProxyStack({ caddyNetns: a, httpPort, env: { PROXY_HTTP_LISTEN: `:${httpPort}` } })
  second = await startCaddy({ netns: b })
  third = await startCaddy({ netns: c })
  const group = await createGroup(stack, { name: 'g', targets: [{ address: `${a.hostAddress}:${up.port}` }] })
  const host = await createHost(stack, {
    domain: DOMAIN,
    target_group_id: group.id,
    waf_enabled: true,
    waf_mode: 'blocking',
    bouncer_enabled: false,
  })
  expect(host.status, host.text).toBe(201)
  nodeNames.set(1, 'node-1')
  nodeAddress.set(1, a.address)
  for (const [name, caddy, machine] of [
    ['edge-b', second, b],
    ['edge-c', third, c],
  ] as const) {
    const res = await stack.panel.request('/api/nodes', { method: 'POST', cookie: stack.admin, body: { name, admin_url: caddy.adminUrl } })
    expect(res.status, res.text).toBe(201)
    nodeNames.set(res.json.id, name)
    nodeAddress.set(res.json.id, machine.address)
  }
  await eventually(
    async () => (await stack.panel.request('/api/nodes', { cookie: stack.admin })).json as Array<Record<string, any>>,
    (list) => list.length === 3 && list.every((n) => n.status.in_sync === true),
    30_000,
  )
}, 90_000)

afterAll(async () => {
  await stack?.stop()
  await second?.stop()
  await third?.stop()
  await up?.stop()
  await machines?.destroy()
})

describe("every node's logs", () => {
  it('gives each node its own log folder (access, error and WAF audit); node 1 keeps the log folder itself, and all show one hash', async () => {
    const ids = [...nodeNames.keys()]
    const logsOf = async (caddy: CaddyHandle) => JSON.stringify(((await caddy.getConfig()) as any).logging)
    expect(await logsOf(stack.caddy)).toContain(`"${stack.logDir}/access.log"`)
    for (const [id, caddy] of [
      [ids[1]!, second],
      [ids[2]!, third],
    ] as const) {
      const config = JSON.stringify(await caddy.getConfig())
      expect(await logsOf(caddy)).toContain(`"${stack.logDir}/nodes/${id}/access.log"`)
      expect(config).toContain(`SecAuditLog ${stack.logDir}/nodes/${id}/waf-audit.log`)
      expect(config).not.toContain(`"${stack.logDir}/access.log"`)
    }
    const list = (await stack.panel.request('/api/nodes', { cookie: stack.admin })).json as Array<Record<string, any>>
    expect(new Set(list.map((n) => n.status.config_hash)).size).toBe(1)
  })

  it("puts each request in the log store once, with the name of the node that served it, as that node's file says", async () => {
    const sent = await sendRequests('/spread/', [7, 4, 9])
    const rows = await eventually(
      () => logRows('source=caddy_access&path=/spread/'),
      (r) => r.length >= 20,
      20_000,
    )
    expect(rows).toHaveLength(20)
    expect(new Set(rows.map((r) => r.path)).size).toBe(20)
    for (const r of rows) expect(r.node, `row ${r.id}`).toBe(nodeNames.get(r.node_id))
    expect(countByNode(rows)).toEqual(sent)
    for (const [id, n] of sent) expect(linesIn(id, 'access.log', '/spread/'), `node ${id}`).toBe(n)
  })

  it('filters by node in the list and in the stats', async () => {
    const all = await logRows('source=caddy_access&path=/spread/')
    for (const id of nodeNames.keys()) {
      const mine = all.filter((r) => r.node_id === id)
      const filtered = await logRows(`source=caddy_access&path=/spread/&node_id=${id}`)
      expect(filtered.map((r) => r.id).sort()).toEqual(mine.map((r) => r.id).sort())
      const stats = await stack.panel.request(`/api/logs/stats?host_domain=${DOMAIN}&source=caddy_access&path=/spread/&node_id=${id}`, {
        cookie: stack.admin,
      })
      expect(stats.status, stats.text).toBe(200)
      expect(stats.json.total).toBe(mine.length)
    }
    const bad = await stack.panel.request('/api/logs?node_id=two', { cookie: stack.admin })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/node_id/)
  })

  it("records each node's WAF audit rows under that node", async () => {
    const sent = await sendRequests('', [2, 5, 3], (i) => `${PROBE}&n=${i}`)
    const blocked = await eventually(
      () => logRows('source=caddy_access&status=403'),
      (r) => r.length >= 10,
      20_000,
    )
    expect(countByNode(blocked)).toEqual(sent)
    const audits = await eventually(
      () => logRows('source=waf_audit'),
      (r) => r.length >= 10,
      20_000,
    )
    expect(countByNode(audits)).toEqual(sent)
    for (const [id, n] of sent) expect(linesIn(id, 'waf-audit.log', '"transaction"'), `node ${id}`).toBe(n)
  })

  it("keeps credentials out of WAF audit rows: the panel's session token, other cookies and basic-auth passwords read REDACTED", async () => {
    const token = 'operator-session-token-0123456789abcdef'
    await httpRequest({
      address: nodeAddress.get(nodeIds()[1]!)!,
      port: stack.httpPort,
      host: DOMAIN,
      path: `${PROBE}&n=credentials`,
      headers: { cookie: `app_pref=dark-mode-77; panel_session=${token}`, authorization: 'Basic YWxpY2U6czNjcmV0LXB3' },
    })
    const rows = await eventually(
      () => logRows('source=waf_audit&path=credentials'),
      (r) => r.length === 1,
      20_000,
    )
    const row = rows[0]!
    for (const secret of [token, 'dark-mode-77', 'YWxpY2U6czNjcmV0LXB3']) expect(row.raw).not.toContain(secret)
    expect(row.raw).toContain('REDACTED')
    // Coraza wrote them (the file is the operator's, as any WAF's audit log): the row is what viewers read.
    expect(linesIn(row.node_id, 'waf-audit.log', token)).toBe(1)
    // Caddy's own access log leaves credentials out by itself (log_credentials off).
    const access = await logRows('source=caddy_access&path=credentials')
    expect(access).toHaveLength(1)
    expect(access[0]!.raw).not.toContain(token)
  })

  it('loses nothing across a panel restart: what the nodes wrote while it was down is ingested once it is back', async () => {
    await stack.panel.stop()
    const sent = await sendRequests('/while-down/', [3, 6, 2])
    await stack.restartPanel()
    const rows = await eventually(
      () => logRows('source=caddy_access&path=/while-down/'),
      (r) => r.length >= 11,
      20_000,
    )
    expect(rows).toHaveLength(11)
    expect(countByNode(rows)).toEqual(sent)
    // Nothing read twice.
    expect(await logRows('source=caddy_access&path=/spread/')).toHaveLength(20)
  })
})
