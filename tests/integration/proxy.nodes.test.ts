import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startAdminTap, type AdminTap } from '../support/admin-tap'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { createNodeNamespaces, type NodeNamespace } from '../support/netns'
import { createClientCertificate, createTestPki } from '../support/certs'
import { registerTestSecret } from '../support/panel'
import { freePort } from '../support/ports'
import { eventually } from '../support/http'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// Many proxy nodes (docs/scaling.md) over plain http admin URLs, against three
// real Caddy processes, each in a network namespace of its own (a machine of its
// own: its own loopback and ports, its admin API reached at its address): node 1
// (the panel's PROXY_ADMIN_URL, the production build), node 2 (Debian's stock
// Caddy 2.6.2: it lacks the rate-limit plugin, which is how it refuses a
// configuration the others accept) and node 3 (the production build). What each
// node holds is read from its admin API. The node behind Caddy's remote admin
// endpoint (TLS, below) runs on loopback.

let up: Awaited<ReturnType<typeof startTestUpstream>>
let machines: Awaited<ReturnType<typeof createNodeNamespaces>>
let stack: ProxyStack
let stockNode: CaddyHandle
let thirdNode: CaddyHandle
/** Node 3 is registered through this relay, which can kill it while a roll pushes to it. */
let thirdTap: AdminTap
let groupId: number
let hostId: number
const nodeIds: Record<string, number> = {}

const apps = async (caddy: CaddyHandle) => ((await caddy.getConfig()) as { apps?: unknown } | null)?.apps ?? null
const asText = (a: unknown) => JSON.stringify(a)

async function nodes() {
  const res = await stack.panel.request('/api/nodes', { cookie: stack.admin })
  expect(res.status).toBe(200)
  return res.json as Array<Record<string, any>>
}
async function nodeNamed(name: string) {
  return (await nodes()).find((n) => n.name === name)!
}
async function auditActions(action: string) {
  const rows = await stack.panel
    .db()
    .execute({ sql: "SELECT raw FROM logs WHERE source = 'audit' AND message = ? ORDER BY id", args: [action] })
  return rows.rows.map((r) => JSON.parse(String(r.raw)))
}
/** PUT of the one host: its name, group and no TLS, plus `fields`. */
function putHost(fields: Record<string, unknown>) {
  return stack.panel.request(`/api/hosts/${hostId}`, {
    method: 'PUT',
    cookie: stack.admin,
    body: { domain: 'multi.example.test', target_group_id: groupId, tls_mode: 'none', ...fields },
  })
}
/** Node 3 restarts with its bootstrap configuration only; the loop gives it what node 1 holds (audited). */
async function restartThirdNodeAndSeeItHealed() {
  await thirdNode.restart()
  const canaryApps = asText(await apps(stack.caddy))
  await eventually(
    () => apps(thirdNode),
    (a) => asText(a) === canaryApps,
    20_000,
  )
  const healed = await eventually(
    () => nodeNamed('node-3'),
    (n) => n.status.in_sync === true,
  )
  expect(healed.status).toMatchObject({ reachable: true, last_push_result: 'applied' })
  expect((await auditActions('proxy_node_heal')).at(-1)).toMatchObject({ node: 'node-3', result: 'applied' })
}
async function hostRow() {
  return JSON.stringify((await stack.panel.db().execute({ sql: 'SELECT * FROM hosts WHERE id = ?', args: [hostId] })).rows)
}

beforeAll(async () => {
  up = await startTestUpstream()
  machines = await createNodeNamespaces(3)
  const [first, second, third] = machines.nodes as [NodeNamespace, NodeNamespace, NodeNamespace]
  stack = await startProxyStack({ caddyNetns: first })
  stockNode = await startCaddy({ stock: true, netns: second })
  thirdTap = await startAdminTap(() => Number(new URL(thirdNode.adminUrl).port), third.address)
  thirdNode = await startCaddy({ adminOrigins: [thirdTap.host], netns: third })
  groupId = (await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })).id
  const host = await createHost(stack, { domain: 'multi.example.test', target_group_id: groupId })
  expect(host.status).toBe(201)
  hostId = host.json.id
}, 60_000)

afterAll(async () => {
  await stack?.stop()
  await stockNode?.stop()
  await thirdNode?.stop()
  await thirdTap?.stop()
  await up?.stop()
  await machines?.destroy()
})

describe('the node registry', () => {
  it('has node 1 from PROXY_ADMIN_URL with no configuration, as the canary', async () => {
    const list = await nodes()
    expect(list).toHaveLength(1)
    expect(list[0]).toMatchObject({
      id: 1,
      name: 'node-1',
      admin_url: stack.caddy.adminUrl,
      source: 'environment',
      canary: true,
      enabled: true,
    })
    expect(list[0]!.status).toMatchObject({ reachable: true, last_push_result: 'applied' })
  })

  it('registers two nodes over http, audited; each gets the current configuration and keeps its own admin listener', async () => {
    for (const [name, adminUrl] of [
      ['node-2', stockNode.adminUrl],
      ['node-3', thirdTap.url],
    ] as const) {
      const res = await stack.panel.request('/api/nodes', {
        method: 'POST',
        cookie: stack.admin,
        body: { name, admin_url: adminUrl, labels: ['Zone=lab'] },
      })
      expect(res.status).toBe(201)
      expect(res.json).toMatchObject({ name, admin_url: adminUrl, labels: ['zone=lab'], enabled: true, canary: false, tls: null })
      nodeIds[name] = res.json.id
    }
    const canaryApps = await apps(stack.caddy)
    expect(asText(canaryApps)).toContain('multi.example.test')
    for (const caddy of [stockNode, thirdNode]) {
      await eventually(
        () => apps(caddy),
        (a) => asText(a) === asText(canaryApps),
      )
      expect(((await caddy.getConfig()) as any).admin.listen).toBe(caddy.adminListen)
    }
    const list = await eventually(nodes, (l) => l.every((n) => n.status.in_sync === true))
    expect(new Set(list.map((n) => n.status.config_hash)).size).toBe(1)
    expect(list.map((n) => n.status.reachable)).toEqual([true, true, true])
    expect((await auditActions('proxy_node_create')).map((a) => a.name)).toEqual(['node-2', 'node-3'])
    expect((await auditActions('proxy_node_heal')).map((a) => [a.node, a.result]).sort()).toEqual([
      ['node-2', 'applied'],
      ['node-3', 'applied'],
    ])
  })

  it('refuses bad registrations with a 400 or 409 naming what to fix, and changes nothing', async () => {
    const before = JSON.stringify((await stack.panel.db().execute('SELECT * FROM proxy_nodes ORDER BY id')).rows)
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ name: 'x', admin_url: 'https://127.0.0.1:9' }, 400, /^tls: an https admin URL is Caddy's remote admin endpoint/],
      [{ name: 'x', admin_url: 'http://127.0.0.1:9/config' }, 400, /^admin_url: give the scheme, host and port only/],
      [{ name: 'x' }, 400, /^admin_url: required/],
      [{ name: 'Bad Name', admin_url: 'http://127.0.0.1:9' }, 400, /^name: /],
      [{ name: 'x', admin_url: thirdTap.url }, 409, /^admin_url: node node-3 already has this admin URL/],
      [{ name: 'node-3', admin_url: 'http://127.0.0.1:9' }, 409, /^name: a node named "node-3" already exists/],
    ]
    for (const [body, status, error] of cases) {
      const res = await stack.panel.request('/api/nodes', { method: 'POST', cookie: stack.admin, body })
      expect(res.status, JSON.stringify(body)).toBe(status)
      expect(res.json.error).toMatch(error)
    }
    const canary = await stack.panel.request('/api/nodes/1', {
      method: 'PUT',
      cookie: stack.admin,
      body: { name: 'node-1', admin_url: 'http://127.0.0.1:9' },
    })
    expect(canary.status).toBe(400)
    expect(canary.json.error).toMatch(/PROXY_ADMIN_URL/)
    const deleteCanary = await stack.panel.request('/api/nodes/1', { method: 'DELETE', cookie: stack.admin })
    expect(deleteCanary.status).toBe(409)
    expect(JSON.stringify((await stack.panel.db().execute('SELECT * FROM proxy_nodes ORDER BY id')).rows)).toBe(before)
  })

  it('lets a viewer read the nodes but not change them', async () => {
    const user = await stack.panel.request('/api/users', {
      method: 'POST',
      cookie: stack.admin,
      body: { email: 'nodes-viewer@example.test', password: 'nodes-viewer-pass-1', role: 'viewer' },
    })
    expect(user.status).toBe(201)
    const viewer = await stack.panel.login('nodes-viewer@example.test', 'nodes-viewer-pass-1')
    expect((await stack.panel.request('/api/nodes', { cookie: viewer })).status).toBe(200)
    const res = await stack.panel.request('/api/nodes', {
      method: 'POST',
      cookie: viewer,
      body: { name: 'v', admin_url: 'http://127.0.0.1:9' },
    })
    expect(res.status).toBe(403)
    expect((await nodes()).map((n) => n.name)).toEqual(['node-1', 'node-2', 'node-3'])
  })
})

describe('the rolling push', () => {
  it('pushes a change to every node, canary first, and reports each in the nodes and in system health', async () => {
    const res = await putHost({ aliases: ['alias.example.test'] })
    expect(res.status).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    for (const caddy of [stack.caddy, stockNode, thirdNode]) expect(asText(await apps(caddy))).toContain('alias.example.test')
    const list = await nodes()
    expect(list.map((n) => [n.name, n.status.last_push_result, n.status.in_sync])).toEqual([
      ['node-1', 'applied', true],
      ['node-2', 'applied', true],
      ['node-3', 'applied', true],
    ])
    expect(list[2]!.status.caddy_build).toMatchObject({ main_module: expect.any(String), version: expect.any(String) })
    const health = await stack.panel.request('/api/system/health', { cookie: stack.admin })
    expect(health.json.proxy_nodes).toMatchObject({ enabled: 3, in_sync: 3 })
    expect(health.json.proxy_nodes.nodes.map((n: any) => n.name)).toEqual(['node-1', 'node-2', 'node-3'])
  })

  it('stops at the first node that refuses, restores the nodes already pushed, and names the node with its error', async () => {
    const before = {
      canary: asText(await apps(stack.caddy)),
      third: asText(await apps(thirdNode)),
      row: await hostRow(),
    }
    // The stock Caddy of node 2 has no rate-limit plugin: the canary (production build) accepts, node 2 refuses.
    const res = await putHost({ aliases: ['alias.example.test'], rate_limit_enabled: true })
    expect(res.status).toBe(502)
    expect(res.json.error).toMatch(
      /^proxy rejected configuration: node node-2 refused the configuration: .*rate_limit.*; restored the previous configuration on node-1$/,
    )
    expect(asText(await apps(stack.caddy))).toBe(before.canary)
    expect(asText(await apps(thirdNode))).toBe(before.third)
    expect(await hostRow()).toBe(before.row)
    const list = await nodes()
    expect(list.map((n) => [n.name, n.status.last_push_result])).toEqual([
      ['node-1', 'restored'],
      ['node-2', 'rejected'],
      ['node-3', 'applied'],
    ])
    expect(list[1]!.status.last_error).toMatch(/rate_limit/)
    const health = await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })
    expect(health.json.proxy.last_reconcile_status).toBe('rejected')
    expect(health.json.proxy.last_error).toMatch(/^node node-2 refused the configuration/)
  })

  it('goes through once the refusing node is disabled (audited)', async () => {
    const off = await stack.panel.request(`/api/nodes/${nodeIds['node-2']}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { name: 'node-2', admin_url: stockNode.adminUrl, enabled: false },
    })
    expect(off.status).toBe(200)
    expect(off.json.enabled).toBe(false)
    expect((await auditActions('proxy_node_update')).at(-1)).toMatchObject({ name: 'node-2', enabled: false })
    const res = await putHost({ rate_limit_enabled: true })
    expect(res.status).toBe(200)
    for (const caddy of [stack.caddy, thirdNode]) expect(asText(await apps(caddy))).toContain('rate_limit')
    expect(asText(await apps(stockNode))).not.toContain('rate_limit')
  })

  it('goes on past a node that is down, and the node gets the current configuration when it comes back', async () => {
    await thirdNode.stop()
    const res = await putHost({ aliases: ['back.example.test'] })
    expect(res.status).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    expect(res.json.reconcile.warnings).toContainEqual(
      expect.stringMatching(/^node node-3 did not answer \(.*unreachable.*\): it gets this configuration when it answers again$/),
    )
    expect(asText(await apps(stack.caddy))).toContain('back.example.test')
    const down = await nodeNamed('node-3')
    expect(down.status).toMatchObject({ reachable: false, last_push_result: 'unreachable' })

    await restartThirdNodeAndSeeItHealed()
  })

  it('removes a node from the rollout on delete (audited); its Caddy keeps what it holds', async () => {
    const held = asText(await apps(stockNode))
    const res = await stack.panel.request(`/api/nodes/${nodeIds['node-2']}`, { method: 'DELETE', cookie: stack.admin })
    expect(res.status).toBe(204)
    expect((await stack.panel.request(`/api/nodes/${nodeIds['node-2']}`, { cookie: stack.admin })).status).toBe(404)
    expect((await auditActions('proxy_node_delete')).map((a) => a.name)).toEqual(['node-2'])
    expect(asText(await apps(stockNode))).toBe(held)
  })
})

describe("a node behind Caddy's remote admin endpoint (TLS client authentication)", () => {
  // The node's own bootstrap: a local admin listener, an identity certificate for
  // 127.0.0.1 from Caddy's internal CA, and the remote admin endpoint accepting the
  // panel's client certificate for /load, /config/ and /metrics only. Its storage is
  // the one the panel pushes (PROXY_DATA_DIR), so its CA and identity stay the same
  // after the first push (docs/scaling.md).
  let remoteNode: CaddyHandle
  let remoteUrl: string
  let serverCaPem: string
  const client = createClientCertificate('edge-panel')
  const stranger = createClientCertificate('someone-else')
  const keyBody = (pem: string) => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '')
  registerTestSecret(client.keyPem, keyBody(client.keyPem), stranger.keyPem, keyBody(stranger.keyPem))

  beforeAll(async () => {
    const remotePort = await freePort()
    remoteUrl = `https://127.0.0.1:${remotePort}`
    remoteNode = await startCaddy({
      bootstrap: {
        admin: {
          identity: { identifiers: ['127.0.0.1'], issuers: [{ module: 'internal' }] },
          remote: {
            listen: `127.0.0.1:${remotePort}`,
            access_control: [
              { public_keys: [client.derBase64], permissions: [{ paths: ['/load', '/config/', '/metrics'], methods: ['GET', 'POST'] }] },
            ],
          },
        },
        storage: { module: 'file_system', root: stack.caddy.storageDir },
      },
    })
    const rootFile = join(stack.caddy.storageDir, 'pki/authorities/local/root.crt')
    serverCaPem = await eventually(
      async () => readFileSync(rootFile, 'utf8'),
      (pem) => pem.includes('BEGIN CERTIFICATE'),
    )
  }, 30_000)
  afterAll(async () => {
    await remoteNode?.stop()
  })

  const register = (tls: Record<string, unknown>) =>
    stack.panel.request('/api/nodes', { method: 'POST', cookie: stack.admin, body: { name: 'remote', admin_url: remoteUrl, tls } })

  it('refuses a key that does not belong to the certificate, without echoing either', async () => {
    const res = await register({ client_cert_pem: client.certPem, client_key_pem: stranger.keyPem, server_ca_pem: serverCaPem })
    expect(res.status).toBe(400)
    expect(res.json.error).toBe('tls.client_key_pem: this key does not belong to tls.client_cert_pem')
    expect((await nodes()).map((n) => n.name)).not.toContain('remote')
  })

  it('pushes through the remote endpoint; the node keeps its remote admin block, and the key is stored sealed and never shown', async () => {
    const res = await register({ client_cert_pem: client.certPem, client_key_pem: client.keyPem, server_ca_pem: serverCaPem })
    expect(res.status).toBe(201)
    expect(res.json.tls).toMatchObject({ client_key_set: true, server_ca_set: true, client_cert: { subject: 'CN=edge-panel' } })
    const id = res.json.id
    const canaryApps = asText(await apps(stack.caddy))
    await eventually(
      () => apps(remoteNode),
      (a) => asText(a) === canaryApps,
    )
    const change = await putHost({ aliases: ['remote.example.test'] })
    expect(change.status).toBe(200)
    expect(change.json.reconcile.warnings ?? []).not.toContainEqual(expect.stringMatching(/node remote/))
    expect(asText(await apps(remoteNode))).toContain('remote.example.test')
    const held = (await remoteNode.getConfig()) as any
    expect(held.admin.remote.listen).toBe(new URL(remoteUrl).host)
    expect(held.admin.identity.identifiers).toEqual(['127.0.0.1'])
    const node = (await stack.panel.request(`/api/nodes/${id}`, { cookie: stack.admin })).json
    expect(node.status).toMatchObject({ reachable: true, in_sync: true, last_push_result: 'applied' })
    expect(node.status.caddy_build).toMatchObject({ main_module: expect.any(String) })

    // "__UNCHANGED__" keeps the stored certificate, key and CA: the next push still gets through.
    const relabel = await stack.panel.request(`/api/nodes/${id}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: {
        name: 'remote',
        admin_url: remoteUrl,
        labels: ['tls'],
        tls: { client_cert_pem: '__UNCHANGED__', client_key_pem: '__UNCHANGED__', server_ca_pem: '__UNCHANGED__' },
      },
    })
    expect(relabel.status, relabel.text).toBe(200)
    expect((await putHost({ aliases: ['remote-2.example.test'] })).status).toBe(200)
    expect(asText(await apps(remoteNode))).toContain('remote-2.example.test')

    const stored = (await stack.panel.db().execute({ sql: 'SELECT tls_client_key FROM proxy_nodes WHERE id = ?', args: [id] })).rows[0]!
    expect(String(stored.tls_client_key)).not.toContain(keyBody(client.keyPem).slice(0, 40))
    // Every answer above went through the harness's secret scan; these places are read directly.
    const everywhere = JSON.stringify([
      (await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit'")).rows,
      (await stack.panel.db().execute('SELECT * FROM runtime_state')).rows,
      (await stack.panel.request('/api/system/health', { cookie: stack.admin })).json,
    ])
    for (const secret of [client.keyPem, keyBody(client.keyPem)]) {
      expect(everywhere).not.toContain(secret)
      expect(stack.panel.output()).not.toContain(secret)
    }
  })

  it('a node killed while the roll pushes to it: the roll goes on to the next node, and the node heals when it returns', async () => {
    // The roll's order is node-1, node-3, remote (by id). The relay kills node 3's Caddy when its /load arrives.
    thirdTap.armNextLoad(() => thirdNode.stop())
    const res = await putHost({ aliases: ['mid-roll.example.test'] })
    expect(thirdTap.fired).toBe(true)
    expect(res.status).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    expect(res.json.reconcile.warnings).toContainEqual(expect.stringMatching(/^node node-3 did not answer/))
    for (const caddy of [stack.caddy, remoteNode]) expect(asText(await apps(caddy))).toContain('mid-roll.example.test')
    expect((await nodeNamed('node-3')).status).toMatchObject({ reachable: false, last_push_result: 'unreachable' })

    await restartThirdNodeAndSeeItHealed()
  })

  /** Gives the remote node other TLS material, then makes a change: the node must not get it. */
  async function changeWithRemoteTls(tls: Record<string, string>, alias: string) {
    const remote = await nodeNamed('remote')
    const swap = await stack.panel.request(`/api/nodes/${remote.id}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { name: 'remote', admin_url: remoteUrl, tls },
    })
    expect(swap.status).toBe(200)
    const res = await putHost({ aliases: [alias] })
    expect(res.status).toBe(200)
    expect(res.json.reconcile.warnings).toContainEqual(expect.stringMatching(/^node remote did not answer/))
    expect(asText(await apps(stack.caddy))).toContain(alias)
    expect(asText(await apps(remoteNode))).not.toContain(alias)
    const status = (await nodeNamed('remote')).status
    expect(status.reachable).toBe(false)
    return status.last_error as string
  }

  it('a client certificate the node does not accept: the node does not answer, the roll goes on, nothing leaks', async () => {
    await changeWithRemoteTls(
      { client_cert_pem: stranger.certPem, client_key_pem: stranger.keyPem, server_ca_pem: serverCaPem },
      'refused-client.example.test',
    )
  })

  it("the panel checks the node's identity: with another CA it does not talk to the node", async () => {
    const error = await changeWithRemoteTls(
      { client_cert_pem: client.certPem, client_key_pem: client.keyPem, server_ca_pem: createTestPki().rootPem },
      'unverified-node.example.test',
    )
    expect(error).toMatch(/certificate/i)
  })
})
