import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { freePort } from '../support/ports'
import { registerTestSecret } from '../support/panel'
import { startPebble } from '../support/pebble'
import { startProcess, waitFor, type ManagedProcess } from '../support/processes'
import { REDIS_SERVER_BIN, startRedis, type RedisHandle } from '../support/redis'
import { startTestUpstream } from '../support/upstream'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver'

// The panel's side of the Redis certificate storage (docs/scaling.md): the setting
// pushed to the production Caddy, node 1's storage health in /api/nodes, the health
// problem and the notification when Redis stops, certificate expiry read through the
// node's storage with no PROXY_DATA_DIR, and the storage's secrets in no answer, row
// or log line. A real redis-server, the production Caddy, Pebble.

const PASSWORD = 'redis-pw-9c41e7d2b6a8'
const ENCRYPTION_KEY = 'storage-seal-5e8a1f3c7b9d2e4a'
registerTestSecret(PASSWORD, ENCRYPTION_KEY)

let redis: RedisHandle
let restarted: ManagedProcess | undefined
let hook: WebhookReceiver
let stack: ProxyStack
let pebble: Awaited<ReturnType<typeof startPebble>>
let up: Awaited<ReturnType<typeof startTestUpstream>>

const get = async (path: string) => {
  const res = await stack.panel.request(path, { cookie: stack.admin })
  expect(res.status, `${path}: ${res.text}`).toBe(200)
  return res
}
const putSettings = (body: Record<string, unknown>, query = '') =>
  stack.panel.request(`/api/settings${query}`, { method: 'PUT', cookie: stack.admin, body })
const caddyConfig = async () => (await stack.caddy.getConfig()) as any
const nodeOne = async () => (await get('/api/nodes')).json.find((n: any) => n.id === 1)
const storageEvents = () =>
  hook.received.map((r) => JSON.parse(r.body)).filter((b) => b.event === 'health_degraded' && b.details.component === 'proxy storage')
const redisStorage = (over: Record<string, unknown> = {}) => ({
  module: 'redis',
  mode: 'single',
  addresses: [redis.address],
  key_prefix: 'panel-test',
  ...over,
})

beforeAll(async () => {
  redis = await startRedis({ password: PASSWORD })
  hook = await startWebhookReceiver()
  const httpPort = await freePort()
  const httpsPort = await freePort()
  up = await startTestUpstream()
  pebble = await startPebble({ httpPort, tlsPort: httpsPort })
  // No PROXY_DATA_DIR: the panel cannot read any folder of the proxy's, only ask the node.
  stack = await startProxyStack({ httpPort, httpsPort, env: { PROXY_DATA_DIR: '', PROXY_ACME_TRUSTED_ROOTS: pebble.caPemFile } })
  const post = (path: string, body: unknown) => stack.panel.request(path, { method: 'POST', cookie: stack.admin, body })
  const ch = (await post('/api/notifications/channels', { name: 'hook', type: 'webhook', config: { url: `${hook.url}/` } })).json
  expect(
    (await post('/api/notifications/rules', { name: 'h', events: ['health_degraded'], channel_ids: [ch.id], throttle_seconds: 0 })).status,
  ).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
  await pebble?.stop()
  await up?.stop()
  await restarted?.stop()
  await redis?.stop()
  await hook?.close()
})

describe('the storage setting', () => {
  it('refuses "encrypt" without a key, naming the setting, and changes nothing', async () => {
    const before = (await get('/api/settings')).json
    const res = await putSettings({ 'proxy.storage': redisStorage({ encrypt: true }), 'proxy.storage.redis_password': PASSWORD })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/proxy\.storage\.encryption_key \(at least 16 characters\)/)
    expect((await get('/api/settings')).json).toEqual(before)
    expect((await caddyConfig()).storage?.module).not.toBe('panel_redis')
  })

  it('a dry run shows the Redis storage with its secrets masked and saves nothing', async () => {
    const res = await putSettings(
      {
        'proxy.storage': redisStorage({ encrypt: true }),
        'proxy.storage.redis_password': PASSWORD,
        'proxy.storage.encryption_key': ENCRYPTION_KEY,
      },
      '?dry_run=1',
    )
    expect(res.status, res.text).toBe(200)
    expect(res.text).toContain('panel_redis')
    expect(res.text).toContain('[redacted]')
    expect((await get('/api/settings')).json['proxy.storage']).toEqual({ module: 'file_system' })
  })

  it('pushes panel_redis to the node, whose storage health is then ok in /api/nodes', async () => {
    const res = await putSettings({
      'proxy.storage': redisStorage({ encrypt: true }),
      'proxy.storage.redis_password': PASSWORD,
      'proxy.storage.encryption_key': ENCRYPTION_KEY,
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json['proxy.storage']).toMatchObject({ module: 'redis', addresses: [redis.address], encrypt: true })
    expect(res.json['proxy.storage.redis_password']).toBe('__SET__')
    expect(res.json['proxy.storage.encryption_key']).toBe('__SET__')
    // The proxy holds it (the test reads Caddy directly, so it sees the real secret values).
    const held = (await caddyConfig()).storage
    expect(held).toEqual({
      module: 'panel_redis',
      mode: 'single',
      addresses: [redis.address],
      db: 0,
      key_prefix: 'panel-test',
      password: PASSWORD,
      encryption_key: ENCRYPTION_KEY,
    })
    // The look before the switch said file_system; the next one (within 10 s) says Redis.
    const node = await eventually(nodeOne, (n) => n?.storage?.module === 'panel_redis' && n.storage.ok === true, 30_000, 500)
    expect(node.storage).toMatchObject({ module: 'panel_redis', ok: true, error: null })
    expect(node.storage.latency_ms).toBeGreaterThanOrEqual(0)
    expect(Date.parse(node.storage.checked_at)).not.toBeNaN()
    // The audit row says from what to what, never a secret.
    const audit = (await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'settings_update'")).rows
    const row = audit.map((r) => JSON.parse(String(r.raw))).find((r) => JSON.stringify(r).includes('"storage"'))
    expect(JSON.stringify(row)).toContain('"from":{"module":"file_system"}')
    expect(JSON.stringify(row)).toContain('"to":{"module":"redis"')
  })

  it("reads an ACME certificate's expiry from the node's storage (no PROXY_DATA_DIR)", async () => {
    const group = await createGroup(stack, { name: 'acme', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const created = await createHost(stack, {
      domain: 'stored.example.test',
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'http',
      tls_acme_ca_url: pebble.directoryUrl,
      tls_email: 'ops@example.test',
    })
    expect(created.status, created.text).toBe(201)
    const host = await eventually(
      async () => (await get('/api/hosts')).json.find((h: any) => h.domain === 'stored.example.test'),
      (h) => !!h?.certificate?.not_after,
      60_000,
      1_000,
    )
    expect(host.certificate).toMatchObject({ source: 'acme', issuer: expect.stringMatching(/Pebble/) })
    expect(Date.parse(host.certificate.not_after)).toBeGreaterThan(Date.now())
    // It is in Redis, not in a folder: the key is there under the prefix.
    expect(await redis.cli(['--scan', '--pattern', 'panel-test*stored.example.test*'])).toContain('stored.example.test')
  })
})

describe('Redis stops and comes back', () => {
  it('shows the failure per node, lists the problem, notifies once; clears once Redis answers again', async () => {
    const port = redis.port
    await redis.stop()
    const failing = await eventually(nodeOne, (n) => n?.storage?.ok === false, 40_000, 500)
    expect(failing.storage.module).toBe('panel_redis')
    expect(failing.storage.error).toMatch(/\S/)
    const health = (await get('/api/system/health')).json
    const problem = health.problems.find((p: any) => p.kind === 'proxy_storage_unreachable')
    expect(problem).toMatchObject({ severity: 'error', subject: `proxy node ${failing.name}`, fix: { to: '/nodes#storage-h' } })
    expect(problem.text).toContain(failing.storage.error)
    const [event] = await eventually(
      async () => storageEvents(),
      (e) => e.length > 0,
      20_000,
      200,
    )
    expect(event.details).toMatchObject({ component: 'proxy storage', node: failing.name })
    // A later look that still fails is the same outage: no second event.
    const firstLook = failing.storage.checked_at
    await eventually(nodeOne, (n) => n.storage.checked_at !== firstLook, 30_000, 500)
    expect((await nodeOne()).storage.ok).toBe(false)
    expect(storageEvents()).toHaveLength(1)

    // The same server again, on its port (empty: it kept nothing on disk).
    const dir = redis.workDir
    const proc = startProcess(
      REDIS_SERVER_BIN,
      ['--port', String(port), '--bind', redis.host, '--dir', dir, '--save', '', '--appendonly', 'no', '--requirepass', PASSWORD],
      { cwd: dir, logFile: join(dir, 'redis-again.log') },
    )
    restarted = proc
    await waitFor(async () => (await redis.cli(['ping']).catch(() => '')).trim() === 'PONG', {
      timeoutMs: 20_000,
      what: 'redis-server again',
      process: proc,
    })
    const back = await eventually(nodeOne, (n) => n?.storage?.ok === true, 40_000, 500)
    expect(back.storage.error).toBeNull()
    const after = (await get('/api/system/health')).json
    expect(after.problems.map((p: any) => p.kind)).not.toContain('proxy_storage_unreachable')
  })
})

describe('a storage that hangs', () => {
  it("is shown failing with the node's reason, not as a node the panel could not ask", async () => {
    const redisAgain = restarted
    if (!redisAgain) throw new Error('the case before starts Redis again; run the file whole')
    // Stopped, not ended: connections stay open and nothing answers, so the node's probe runs into its own time limit.
    redisAgain.signal('SIGSTOP')
    try {
      const hanging = await eventually(nodeOne, (n) => n?.storage?.ok !== true, 40_000, 500)
      expect(hanging.storage).toMatchObject({ module: 'panel_redis', ok: false })
      expect(hanging.storage.error).toMatch(/\S/)
    } finally {
      redisAgain.signal('SIGCONT')
    }
    await eventually(nodeOne, (n) => n?.storage?.ok === true, 40_000, 500)
  })
})

describe('the storage secrets', () => {
  it('are in no answer, revision, audit row or log line of the panel', async () => {
    // Every answer above was scanned by the harness (registerTestSecret); the stored texts too:
    const revisions = (await get('/api/revisions')).json
    const list = Array.isArray(revisions) ? revisions : revisions.revisions
    expect(list.length).toBeGreaterThan(1)
    const texts: string[] = [JSON.stringify(revisions)]
    for (const r of list.slice(0, 5)) texts.push((await get(`/api/revisions/${r.id}`)).text)
    texts.push((await get(`/api/revisions/diff?from=${list.at(-1).id}&to=${list[0].id}`)).text)
    const rows = (await stack.panel.db().execute('SELECT source, message, raw FROM logs')).rows
    const revisionRows = (await stack.panel.db().execute('SELECT id, summary, config_hash FROM config_revisions')).rows
    texts.push(JSON.stringify(rows), JSON.stringify(revisionRows), stack.panel.output())
    for (const t of texts) {
      expect(t).not.toContain(PASSWORD)
      expect(t).not.toContain(ENCRYPTION_KEY)
    }
    expect(texts.join('\n')).toContain('panel_redis')
  })
})
