import { randomBytes } from 'node:crypto'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { LAPI_USER_AGENT, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// One engine for all bouncers (docs/scaling.md): two production Caddy nodes on loopback
// and one real CrowdSec local API. Node 1 pulls with the shared LAPI_BOUNCER_KEY, node
// edge-2 with a key of its own made by `cscli bouncers add`; the panel reads the engine's
// own database (read-only) to show each bouncer's last pull and node, and the engine's
// machines, a node's agent pending until `cscli machines validate`.

let cs: CrowdsecHandle
let stack: ProxyStack
let second: CaddyHandle
let up: Awaited<ReturnType<typeof startTestUpstream>>
let nodeKey: string
let otherKey: string
let edgeId: number
const panelMirrorKey = randomBytes(16).toString('hex')

type Json = Record<string, any>
const crowdsecApp = async (caddy: CaddyHandle) => ((await caddy.getConfig()) as Json | null)?.apps?.crowdsec as Json | undefined
const get = async (path: string) => {
  const res = await stack.panel.request(path, { cookie: stack.admin })
  expect(res.status, res.text).toBe(200)
  return res.json
}
const nodeNamed = async (name: string) => ((await get('/api/nodes')) as Json[]).find((n) => n.name === name)!
const auditRows = async () =>
  (await stack.panel.db().execute("SELECT message, raw FROM logs WHERE source = 'audit' ORDER BY id")).rows.map((r) => ({
    message: String(r.message),
    raw: String(r.raw),
  }))
/** The engine's own view (cscli reads the same database): name → last_pull. */
async function cscliBouncers(): Promise<Json[]> {
  return JSON.parse(await cs.cscli(['bouncers', 'list', '-o', 'json']))
}
function putEdge(fields: Json) {
  return stack.panel.request(`/api/nodes/${edgeId}`, {
    method: 'PUT',
    cookie: stack.admin,
    body: { name: 'edge-2', admin_url: second.adminUrl, ...fields },
  })
}

beforeAll(async () => {
  up = await startTestUpstream()
  cs = await startCrowdsec({ agent: false })
  // The panel's decision mirror pulls with a key of its own, as the compose stack sets it.
  await cs.cscli(['bouncers', 'add', 'panel-mirror', '-k', panelMirrorKey])
  nodeKey = (await cs.cscli(['bouncers', 'add', 'edge-2-bouncer', '-o', 'raw'])).trim()
  otherKey = (await cs.cscli(['bouncers', 'add', 'spare-bouncer', '-o', 'raw'])).trim()
  registerTestSecret(nodeKey, otherKey, cs.bouncerKey, panelMirrorKey)
  stack = await startProxyStack({ env: { ...panelEnvFor(cs), LAPI_PANEL_BOUNCER_KEY: panelMirrorKey } })
  second = await startCaddy()
  const group = await createGroup(stack, { name: 'bouncers', targets: [{ address: `127.0.0.1:${up.port}` }] })
  // A host with the bouncer (the default): the configuration carries apps.crowdsec.
  expect((await createHost(stack, { domain: 'bouncers.example.test', target_group_id: group.id })).status).toBe(201)
}, 120_000)
afterAll(async () => {
  await stack?.stop()
  await second?.stop()
  await cs?.stop()
  await up?.stop()
})

describe('one engine for all bouncers', () => {
  it('a node registered with its own bouncer key pulls with it; node 1 keeps the shared key; the key is never answered', async () => {
    const res = await stack.panel.request('/api/nodes', {
      method: 'POST',
      cookie: stack.admin,
      body: { name: 'edge-2', admin_url: second.adminUrl, bouncer_key: nodeKey },
    })
    expect(res.status, res.text).toBe(201)
    expect(res.json).toMatchObject({ name: 'edge-2', bouncer_key_set: true })
    edgeId = res.json.id

    // Each Caddy holds its own key; the rest of the bouncer's block is the same.
    const edgeApp = await eventually(
      () => crowdsecApp(second),
      (a) => a?.api_key === nodeKey,
    )
    expect(edgeApp?.api_key).toBe(nodeKey)
    const canaryApp = (await crowdsecApp(stack.caddy))!
    expect(canaryApp.api_key).toBe(cs.bouncerKey)
    expect({ ...edgeApp, api_key: 'x' }).toEqual({ ...canaryApp, api_key: 'x' })
    // The node's hash is taken with the key mapped back: it is in sync, not pushed again and again.
    const edge = await eventually(
      () => nodeNamed('edge-2'),
      (n) => n.status.in_sync === true,
    )
    expect(edge.status.in_sync).toBe(true)
    expect(edge.status.config_hash).toBe((await nodeNamed('node-1')).status.config_hash)

    // A change reaches both, each with its key.
    const group = await createGroup(stack, { name: 'second', targets: [{ address: `127.0.0.1:${up.port}` }] })
    expect((await createHost(stack, { domain: 'second.example.test', target_group_id: group.id })).status).toBe(201)
    for (const [caddy, key] of [
      [stack.caddy, cs.bouncerKey],
      [second, nodeKey],
    ] as const) {
      const held = JSON.stringify(await caddy.getConfig())
      expect(held).toContain('second.example.test')
      expect((await crowdsecApp(caddy))!.api_key).toBe(key)
    }

    const stored = (await stack.panel.db().execute({ sql: 'SELECT bouncer_key FROM proxy_nodes WHERE id = ?', args: [edgeId] })).rows[0]!
    expect(String(stored.bouncer_key)).not.toContain(nodeKey)
    const created = (await auditRows()).filter((r) => r.message === 'proxy_node_create').at(-1)!
    expect(JSON.parse(created.raw)).toMatchObject({ name: 'edge-2', bouncer_key_set: true })
  })

  it("the engine's bouncers with their last pull, each tied to its node by its key", async () => {
    // Each Caddy's bouncer pulls at its start; the engine records the pull and the bouncer's name and version.
    const bouncers = await eventually(
      () => get('/api/security/bouncers') as Promise<Json[]>,
      (list) => ['panel-bouncer', 'edge-2-bouncer', 'panel-mirror'].every((name) => list.find((b) => b.name === name)?.last_pull),
      20_000,
    )
    const byName = Object.fromEntries(bouncers.map((b) => [b.name, b]))
    for (const name of ['panel-bouncer', 'edge-2-bouncer', 'panel-mirror']) expect(byName[name].last_pull).toEqual(expect.any(String))
    expect(byName['panel-bouncer']).toMatchObject({ key: 'shared', node: 'node-1', node_id: 1, ip_address: '127.0.0.1', revoked: false })
    expect(byName['edge-2-bouncer']).toMatchObject({ key: 'node', node: 'edge-2', node_id: edgeId, ip_address: '127.0.0.1' })
    expect(byName['edge-2-bouncer'].type).toMatch(/caddy/i)
    expect(byName['panel-mirror']).toMatchObject({ key: 'panel', node: null })
    // Made with cscli, never used: no pull, no node (the panel does not hold its key).
    expect(byName['spare-bouncer']).toMatchObject({ key: 'other', node: null, last_pull: null, ip_address: '' })

    // The same pull times as the engine's own tool reports.
    const engine = Object.fromEntries((await cscliBouncers()).map((b) => [b.name, b.last_pull]))
    for (const name of ['panel-bouncer', 'edge-2-bouncer'])
      expect(byName[name].last_pull).toBe(new Date(String(engine[name]).replace(/(\.\d{3})\d*/, '$1')).toISOString())

    const nodes = (await get('/api/nodes')) as Json[]
    expect(nodes.find((n) => n.name === 'node-1')!.bouncer).toEqual({ name: 'panel-bouncer', last_pull: byName['panel-bouncer'].last_pull })
    expect(nodes.find((n) => n.name === 'edge-2')!.bouncer).toEqual({
      name: 'edge-2-bouncer',
      last_pull: byName['edge-2-bouncer'].last_pull,
    })
    expect((await get(`/api/nodes/${edgeId}`)).bouncer.name).toBe('edge-2-bouncer')
  })

  it("a node's engine agent registered through the local API shows as pending, then validated after cscli machines validate", async () => {
    const register = await fetch(`${cs.url}/v1/watchers`, {
      method: 'POST',
      headers: { 'user-agent': LAPI_USER_AGENT, 'content-type': 'application/json' },
      body: JSON.stringify({ machine_id: 'edge-2', password: randomBytes(16).toString('hex') }),
    })
    expect(register.status).toBe(201)
    const machines = (await get('/api/security/machines')) as Json[]
    expect(machines.find((m) => m.machine_id === 'edge-2')).toMatchObject({
      status: 'pending',
      node: 'edge-2',
      node_id: edgeId,
      ip_address: '127.0.0.1',
    })
    // The harness's own machines: validated, and no node is named like them.
    for (const id of ['panel', 'agent']) expect(machines.find((m) => m.machine_id === id)).toMatchObject({ status: 'validated' })
    expect(machines.find((m) => m.machine_id === 'panel')!.node).toBeNull()
    // The panel's own machine is marked (the Nodes screen explains it instead of showing "never" as a fault).
    expect(machines.find((m) => m.machine_id === 'panel')!.panel).toBe(true)
    expect(machines.find((m) => m.machine_id === 'agent')!.panel).toBe(false)
    expect(machines.find((m) => m.machine_id === 'edge-2')!.panel).toBe(false)

    await cs.cscli(['machines', 'validate', 'edge-2'])
    expect(((await get('/api/security/machines')) as Json[]).find((m) => m.machine_id === 'edge-2')!.status).toBe('validated')
  })

  it('bad keys are refused naming the field, never quoting the key, and change nothing', async () => {
    const before = JSON.stringify((await stack.panel.db().execute('SELECT * FROM proxy_nodes ORDER BY id')).rows)
    const auditBefore = (await auditRows()).length
    const cases: Array<[Promise<any>, number, RegExp]> = [
      [putEdge({ bouncer_key: 'short' }), 400, /^bouncer_key: must be the key/],
      [putEdge({ bouncer_key: 'has spaces in it, not a key' }), 400, /^bouncer_key: must be the key/],
      // The shared key as a node's own would make the two nodes one bouncer.
      [putEdge({ bouncer_key: cs.bouncerKey }), 400, /^bouncer_key: this is one of the panel's own keys/],
      [putEdge({ bouncer_key: panelMirrorKey }), 400, /^bouncer_key: this is one of the panel's own keys/],
      [
        stack.panel.request('/api/nodes/1', { method: 'PUT', cookie: stack.admin, body: { name: 'node-1', bouncer_key: otherKey } }),
        400,
        /^bouncer_key: node 1's bouncer uses LAPI_BOUNCER_KEY/,
      ],
      [
        stack.panel.request('/api/nodes', {
          method: 'POST',
          cookie: stack.admin,
          body: { name: 'edge-3', admin_url: 'http://127.0.0.1:9', enabled: false, bouncer_key: nodeKey },
        }),
        409,
        /^bouncer_key: node edge-2 already uses this key/,
      ],
      [
        stack.panel.request('/api/nodes', {
          method: 'POST',
          cookie: stack.admin,
          body: { name: 'edge-4', admin_url: 'http://127.0.0.1:9', enabled: false, bouncer_key: '__UNCHANGED__' },
        }),
        400,
        /^bouncer_key: nothing is stored for this node/,
      ],
    ]
    for (const [pending, status, message] of cases) {
      const res = await pending
      expect(res.status, res.text).toBe(status)
      expect(res.json.error).toMatch(message)
    }
    expect(JSON.stringify((await stack.panel.db().execute('SELECT * FROM proxy_nodes ORDER BY id')).rows)).toBe(before)
    expect((await auditRows()).length).toBe(auditBefore)
  })

  it('left out keeps the key, null gives the node the shared key back, a new key replaces it', async () => {
    const relabel = await putEdge({ labels: ['kept'] })
    expect(relabel.status, relabel.text).toBe(200)
    expect(relabel.json.bouncer_key_set).toBe(true)
    expect((await crowdsecApp(second))!.api_key).toBe(nodeKey)

    const cleared = await putEdge({ bouncer_key: null })
    expect(cleared.status, cleared.text).toBe(200)
    expect(cleared.json.bouncer_key_set).toBe(false)
    // The loop sees that the node holds a key that is no longer its own and pushes (regression: it looked in sync).
    expect(
      (
        await eventually(
          () => crowdsecApp(second),
          (a) => a?.api_key === cs.bouncerKey,
        )
      )?.api_key,
    ).toBe(cs.bouncerKey)

    const replaced = await putEdge({ bouncer_key: otherKey })
    expect(replaced.status, replaced.text).toBe(200)
    const updates = (await auditRows()).filter((r) => r.message === 'proxy_node_update').map((r) => JSON.parse(r.raw))
    expect(updates.slice(-3).map((u) => [u.bouncer_key_set, u.bouncer_key_changed])).toEqual([
      [true, false],
      [false, true],
      [true, true],
    ])
    // Regression: the node held the shared key, which maps back to the same shared text as its new
    // key would, so it looked in sync and was never given its key.
    expect(
      (
        await eventually(
          () => crowdsecApp(second),
          (a) => a?.api_key === otherKey,
        )
      )?.api_key,
    ).toBe(otherKey)
    const bouncers = await eventually(
      () => get('/api/security/bouncers') as Promise<Json[]>,
      (list) => !!list.find((b) => b.name === 'spare-bouncer')?.last_pull,
      20_000,
    )
    expect(bouncers.find((b) => b.name === 'spare-bouncer')).toMatchObject({ key: 'node', node: 'edge-2', last_pull: expect.any(String) })
    // edge-2-bouncer's key is no node's any more.
    expect(bouncers.find((b) => b.name === 'edge-2-bouncer')).toMatchObject({ key: 'other', node: null })
    expect((await nodeNamed('edge-2')).bouncer.name).toBe('spare-bouncer')
  })

  it('an engine database the panel cannot read: 503 saying why, and the node list still answers', async () => {
    // The panel reads the engine's configuration at each answer; the engine itself is not restarted.
    const local = join(cs.configDir, 'config.yaml.local')
    writeFileSync(local, 'db_config:\n  type: mysql\n  host: db.internal\n')
    try {
      for (const path of ['/api/security/bouncers', '/api/security/machines']) {
        const res = await stack.panel.request(path, { cookie: stack.admin })
        expect(res.status).toBe(503)
        expect(res.json.error).toMatch(
          /^security engine unavailable: its database is of type "mysql"; the panel reads .* only from a sqlite database/,
        )
      }
      const nodes = (await get('/api/nodes')) as Json[]
      expect(nodes.map((n) => n.bouncer)).toEqual([null, null])
    } finally {
      rmSync(local)
    }
    expect(((await get('/api/nodes')) as Json[]).every((n) => n.bouncer)).toBe(true)
  })

  it('no node key in any audit row, state row, health answer or panel output', async () => {
    // Every answer above went through the harness's secret scan; these places are read directly.
    const everywhere = JSON.stringify([
      (await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit'")).rows,
      (await stack.panel.db().execute('SELECT * FROM runtime_state')).rows,
      await get('/api/system/health'),
    ])
    for (const secret of [nodeKey, otherKey]) {
      expect(everywhere).not.toContain(secret)
      expect(stack.panel.output()).not.toContain(secret)
    }
  })
})
