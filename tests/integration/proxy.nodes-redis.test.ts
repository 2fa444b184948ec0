import { execFileSync } from 'node:child_process'
import { X509Certificate } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestPki } from '../support/certs'
import { startFleet, normalSerial, type Fleet } from '../support/fleet'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { startRedisServer, type RedisProcess } from '../support/redis'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

// Proxy nodes without a shared folder (docs/scaling.md, issue 41's "Done when"):
// three production Caddy nodes, each a machine of its own (a network namespace
// and a private file system: no node sees another's folders nor the panel's
// PROXY_DATA_DIR), a real redis-server with a password as the certificate storage
// (proxy.storage set through PUT /api/settings), Pebble as the CA. Pebble's DNS
// sends every validation to node 1 (fleet.ts): a node that placed an order
// answers nothing itself, so the certificate of a node other than node 1 can only
// come through the storage the nodes share, Redis.
//
// The renewal: a second Pebble issues 30-second certificates and every node looks
// at its certificates each second (PROXY_RENEW_INTERVAL_SECONDS=1), as in
// proxy.nodes-certs.test.ts; certmagic renews at a third of the lifetime left.

const DOMAIN = 'fleet.example.test'
const UPLOADED = 'uploaded.example.test'
const RENEWED = 'renewed.example.test'
const SHORT_VALIDITY_S = 30
const REDIS_PASSWORD = 'redis-pw-Fleet-41-9a7c'

let fleet: Fleet
let redis: RedisProcess
let hook: WebhookReceiver

const storagePut = () => ({
  'proxy.storage': { module: 'redis', mode: 'single', addresses: [redis.address], key_prefix: 'fleet' },
  'proxy.storage.redis_password': REDIS_PASSWORD,
})
/** `ls -A path` as node k sees it (its own mount namespace); null when the path does not exist there. */
function seenBy(k: number, path: string): string[] | null {
  try {
    return execFileSync('nsenter', ['-t', String(fleet.nodes[k]!.pid), '-m', 'ls', '-A', path], { encoding: 'utf8', stdio: 'pipe' })
      .split('\n')
      .filter(Boolean)
  } catch {
    return null
  }
}
/** What each node presents for `name` (nodes 1, 2, 3), read until all three pass `accept`. */
const onEveryNode = (name: string, accept: (c: Awaited<ReturnType<Fleet['presentedBy']>>) => boolean, timeoutMs = 30_000) =>
  eventually(
    () => Promise.all([0, 1, 2].map((k) => fleet.presentedBy(k, name))),
    (certs) => certs.every(accept),
    timeoutMs,
    200,
  )

beforeAll(async () => {
  fleet = await startFleet({ privateFs: true, shortValiditySeconds: SHORT_VALIDITY_S, env: { PROXY_RENEW_INTERVAL_SECONDS: '1' } })
  registerTestSecret(REDIS_PASSWORD)
  redis = await startRedisServer({ addresses: [fleet.machines[0]!.hostAddress], password: REDIS_PASSWORD })
  hook = await startWebhookReceiver()
  const channel = await fleet.api('/api/notifications/channels', 'POST', { name: 'hook', type: 'webhook', config: { url: `${hook.url}/` } })
  expect(channel.status, channel.text).toBe(201)
  const rule = await fleet.api('/api/notifications/rules', 'POST', {
    name: 'health',
    events: ['health_degraded'],
    channel_ids: [(channel.json as any).id],
    throttle_seconds: 0,
  })
  expect(rule.status, rule.text).toBe(201)
  const put = await fleet.api('/api/settings', 'PUT', storagePut())
  expect(put.status, put.text).toBe(200)
  await eventually(fleet.listNodes, (l) => l.every((n) => n.status.in_sync === true), 20_000)
}, 180_000)

afterAll(async () => {
  await fleet?.stop()
  await redis?.stop()
  await hook?.close()
})

describe('three nodes, no shared folder, certificates in Redis', () => {
  it('gives every node the Redis storage, and no node can read another node’s folders or the panel’s PROXY_DATA_DIR', async () => {
    for (const node of fleet.nodes) {
      const storage = ((await node.getConfig()) as any).storage
      expect(storage).toMatchObject({ module: 'panel_redis', mode: 'single', addresses: [redis.address], key_prefix: 'fleet' })
      expect(storage.password).toBe(REDIS_PASSWORD)
    }
    // A file only the host has, in the panel's PROXY_DATA_DIR. (Before the switch to Redis each
    // node was given the file system at that path, and wrote its lock folder into its own copy.)
    writeFileSync(join(fleet.panelDataDir, 'panel-only.marker'), 'the panel machine\n')
    for (const [k, node] of fleet.nodes.entries()) {
      // Its own work folder (bootstrap, XDG folders) is there...
      expect(seenBy(k, node.workDir)).toEqual(expect.arrayContaining(['bootstrap.json', 'data']))
      // ...the others' and the panel's are not, though all exist on the host.
      for (const other of fleet.nodes.filter((o) => o !== node))
        expect(seenBy(k, other.workDir), `node ${k + 1} sees ${other.workDir}`).toBeNull()
      expect(seenBy(k, fleet.panelDataDir) ?? []).not.toContain('panel-only.marker')
      expect(seenBy(k, fleet.stack.panel.dataDir)).toBeNull()
    }
    expect(existsSync(join(fleet.panelDataDir, 'panel-only.marker'))).toBe(true)
  })

  it('obtains the certificate of a host served by all three nodes once: one order at the CA, the same serial on every node', async () => {
    expect(fleet.issued()).toBe(0)
    await fleet.createAcmeHost(DOMAIN)
    const certs = await onEveryNode(DOMAIN, (c) => !!c && /Pebble/.test(c.issuer))
    for (const c of certs) expect(c).toMatchObject({ subject: DOMAIN })
    expect(new Set(certs.map((c) => c!.fingerprint256)).size).toBe(1)
    expect(normalSerial(certs[0]!.serialNumber)).toBe(fleet.lastSerialIssued())
    expect(fleet.issued()).toBe(1)
    // It is in Redis, under the key prefix (the nodes have nowhere else to share it).
    const keys = (await redis.cli(['--scan', '--pattern', `fleet/certificates/*${DOMAIN}*`])).split('\n').filter(Boolean).sort()
    expect(keys.some((k) => k.endsWith(`/${DOMAIN}/${DOMAIN}.crt`))).toBe(true)
    expect(keys.some((k) => k.endsWith(`/${DOMAIN}/${DOMAIN}.key`))).toBe(true)
    // No node keeps a certificate in its own folder at the old storage path.
    for (const k of [0, 1, 2]) expect(seenBy(k, fleet.panelDataDir) ?? []).not.toContain('certificates')
  }, 60_000)

  it('presents an uploaded certificate on all three nodes (it comes with the configuration)', async () => {
    const pki = createTestPki()
    const leaf = pki.leaf(UPLOADED)
    registerTestSecret(leaf.keyPem, JSON.stringify(leaf.keyPem).slice(1, -1))
    const group = await fleet.api('/api/target-groups', 'POST', { name: 'uploaded', targets: [{ address: '127.0.0.1:9' }] })
    const host = await fleet.api('/api/hosts', 'POST', { domain: UPLOADED, target_group_id: (group.json as any).id, tls_mode: 'none' })
    expect(host.status, host.text).toBe(201)
    const form = new FormData()
    for (const [k, v] of Object.entries({ cert_pem: leaf.certPem, key_pem: leaf.keyPem, chain_pem: pki.intermediatePem }))
      form.append(k, new Blob([v], { type: 'application/x-pem-file' }), `${k}.pem`)
    const upload = await fleet.stack.panel.request(`/api/manual-certs/${(host.json as any).id}`, {
      method: 'POST',
      cookie: fleet.stack.admin,
      form,
    })
    expect(upload.status, upload.text).toBe(201)
    expect(((upload.json as any).reconcile.warnings ?? []).filter((w: string) => /^node /.test(w))).toEqual([])
    const fingerprint = new X509Certificate(leaf.certPem).fingerprint256
    const certs = await onEveryNode(UPLOADED, (c) => c?.fingerprint256 === fingerprint)
    expect(certs.map((c) => c?.fingerprint256)).toEqual([fingerprint, fingerprint, fingerprint])
    expect(fleet.issued()).toBe(1)
  })

  it('renews a certificate once, by one node, and every node then presents the renewed one', async () => {
    const short = fleet.shortPebble!
    await fleet.createAcmeHost(RENEWED, short)
    const first = await onEveryNode(RENEWED, (c) => c?.subject === RENEWED)
    expect(new Set(first.map((c) => c?.fingerprint256)).size).toBe(1)
    expect(fleet.issued(short)).toBe(1)
    const firstLeaf = first[0]!.fingerprint256
    // Due at a third of its lifetime left (20 s after issuance); each node looks every second.
    const renewed = await onEveryNode(
      RENEWED,
      (c) => !!c && c.subject === RENEWED && c.fingerprint256 !== firstLeaf,
      (SHORT_VALIDITY_S + 15) * 1000,
    )
    expect(new Set(renewed.map((c) => c?.fingerprint256)).size).toBe(1)
    expect(renewed[0]!.fingerprint256).not.toBe(firstLeaf)
    // Read before the renewed one falls due in turn (two thirds of its lifetime later).
    expect(fleet.issued(short)).toBe(2)
    expect(normalSerial(renewed[0]!.serialNumber)).toBe(fleet.lastSerialIssued(short))
  }, 90_000)

  it('shows a node that cannot reach Redis as failing in /api/nodes and notifies; the node keeps serving what it holds; restored, ok again', async () => {
    const storageOf = async () => (await fleet.listNodes()).map((n) => n.storage as Record<string, any>)
    const before = await eventually(storageOf, (l) => l.every((s) => s.module === 'panel_redis' && s.ok === true), 30_000)
    for (const s of before) expect(s).toMatchObject({ module: 'panel_redis', ok: true, error: null, latency_ms: expect.any(Number) })
    const served = (await fleet.presentedBy(2, DOMAIN))!.fingerprint256
    const degraded = () =>
      hook.received.map((r) => JSON.parse(r.body)).filter((b) => b.event === 'health_degraded' && b.details.component === 'proxy storage')
    expect(degraded()).toEqual([])

    // Node 3's machine loses its route to Redis (the host and the other nodes keep theirs).
    const ns3 = fleet.machines[2]!.name
    const route = ['netns', 'exec', ns3, 'ip', 'route', 'add', 'blackhole', `${redis.host}/32`]
    execFileSync('ip', route)
    try {
      const failing = await eventually(storageOf, (l) => l[2]?.ok === false, 40_000, 500)
      expect(failing[2]).toMatchObject({ module: 'panel_redis', ok: false, error: expect.any(String) })
      expect(failing[2]!.error).not.toContain(REDIS_PASSWORD)
      expect(failing[0]!.ok).toBe(true)
      expect(failing[1]!.ok).toBe(true)
      const sent = await eventually(
        async () => degraded(),
        (d) => d.length >= 1,
        15_000,
        200,
      )
      expect(sent).toHaveLength(1)
      expect(sent[0].details).toMatchObject({ component: 'proxy storage', node: 'edge-3' })
      expect(JSON.stringify(sent)).not.toContain(REDIS_PASSWORD)
      const health = await fleet.api('/api/dashboard/health')
      expect((health.json as any).problems.map((p: any) => p.kind)).toContain('proxy_storage_unreachable')
      // It serves the certificate it holds in memory.
      expect((await fleet.presentedBy(2, DOMAIN))?.fingerprint256).toBe(served)
    } finally {
      execFileSync(
        'ip',
        route.map((a) => (a === 'add' ? 'del' : a)),
      )
    }
    const after = await eventually(storageOf, (l) => l.every((s) => s.ok === true), 40_000, 500)
    expect(after.map((s) => s.ok)).toEqual([true, true, true])
    const health = await fleet.api('/api/dashboard/health')
    expect((health.json as any).problems.map((p: any) => p.kind)).not.toContain('proxy_storage_unreachable')
    // One notification for the one failure.
    expect(degraded()).toHaveLength(1)
  }, 120_000)
})
