import { execFile } from 'node:child_process'
import { existsSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { edgeBinaries } from '../support/edge-bins'
import { startFleet, normalSerial, type Fleet } from '../support/fleet'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { makeTempDir } from '../support/processes'
import { startRedisServer, type RedisProcess } from '../support/redis'

// Moving a running fleet from the shared folder to Redis without a new issuance
// (docs/scaling.md, "Moving from the shared folder to Redis", issue 41 item 4):
// three production Caddy nodes in network namespaces sharing one folder (the
// panel's PROXY_DATA_DIR, the file_system storage, the default), a certificate
// issued by Pebble; then the steps of the docs: copy the storage with Caddy's own
// `caddy storage export` and `caddy storage import` (each given a configuration
// naming its storage), switch proxy.storage to redis with PUT /api/settings.
// No new order at the CA; every node serves the same certificate; the old folder's
// certificates are moved away and a restarted node (memory empty) loads it from Redis.

const DOMAIN = 'migrate.example.test'
const REDIS_PASSWORD = 'redis-pw-Migrate-41-c0d4'
const run = promisify(execFile)

let fleet: Fleet
let redis: RedisProcess
let served: string

const everyNode = (accept: (fp: string | undefined) => boolean, timeoutMs = 30_000) =>
  eventually(
    () => Promise.all([0, 1, 2].map((k) => fleet.presentedBy(k, DOMAIN))),
    (c) => c.every((x) => accept(x?.fingerprint256)),
    timeoutMs,
    200,
  )

beforeAll(async () => {
  fleet = await startFleet({ privateFs: false })
  registerTestSecret(REDIS_PASSWORD)
  redis = await startRedisServer({ addresses: [fleet.machines[0]!.hostAddress], password: REDIS_PASSWORD })
}, 180_000)

afterAll(async () => {
  await fleet?.stop()
  await redis?.stop()
})

describe('from the shared folder to Redis, without a new issuance', () => {
  it('starts on the shared folder: one certificate, served by all three nodes', async () => {
    for (const node of fleet.nodes)
      expect(((await node.getConfig()) as any).storage).toEqual({ module: 'file_system', root: fleet.panelDataDir })
    await fleet.createAcmeHost(DOMAIN)
    const certs = await everyNode((fp) => !!fp)
    served = certs[0]!.fingerprint256
    expect(certs.map((c) => c?.fingerprint256)).toEqual([served, served, served])
    expect(normalSerial(certs[0]!.serialNumber)).toBe(fleet.lastSerialIssued())
    expect(fleet.issued()).toBe(1)
  }, 60_000)

  it('copies the storage with caddy storage export | caddy storage import, switches, and orders nothing new', async () => {
    // Step 1: copy. Each command reads the storage from a configuration file (Caddy's JSON); the
    // one naming Redis holds its password, so it is the operator's own file, mode 0600.
    const dir = makeTempDir('storage-copy-')
    const from = join(dir, 'from.json')
    const to = join(dir, 'to.json')
    writeFileSync(from, JSON.stringify({ storage: { module: 'file_system', root: fleet.panelDataDir } }))
    writeFileSync(
      to,
      JSON.stringify({ storage: { module: 'panel_redis', addresses: [redis.address], password: REDIS_PASSWORD, key_prefix: 'mig' } }),
      { mode: 0o600 },
    )
    const caddy = edgeBinaries().caddy
    const tar = join(dir, 'storage.tar')
    await run(caddy, ['storage', 'export', '--config', from, '--output', tar])
    const imported = await run(caddy, ['storage', 'import', '--config', to, '--input', tar])
    expect(imported.stdout).toContain('Successfully imported storage')
    const keys = (await redis.cli(['--scan', '--pattern', 'mig/*'])).split('\n')
    expect(keys.some((k) => k.endsWith(`/${DOMAIN}/${DOMAIN}.crt`))).toBe(true)
    expect(keys.some((k) => k.startsWith('mig/acme/'))).toBe(true)

    // Step 2: switch.
    const put = await fleet.api('/api/settings', 'PUT', {
      'proxy.storage': { module: 'redis', mode: 'single', addresses: [redis.address], key_prefix: 'mig' },
      'proxy.storage.redis_password': REDIS_PASSWORD,
    })
    expect(put.status, put.text).toBe(200)
    await eventually(fleet.listNodes, (l) => l.every((n) => n.status.in_sync === true), 20_000)
    for (const node of fleet.nodes)
      expect(((await node.getConfig()) as any).storage).toMatchObject({ module: 'panel_redis', key_prefix: 'mig' })
    const nodes = await eventually(
      fleet.listNodes,
      (l) => l.every((n) => n.storage.module === 'panel_redis' && n.storage.ok === true),
      30_000,
    )
    expect(nodes.map((n) => n.storage.ok)).toEqual([true, true, true])

    const certs = await everyNode((fp) => fp === served)
    expect(certs.map((c) => c?.fingerprint256)).toEqual([served, served, served])
    expect(fleet.issued()).toBe(1)
  }, 90_000)

  it('a node restarted afterwards (its memory empty) loads the certificate from Redis, the old folder emptied', async () => {
    // The old folder no longer holds the certificate: what a node loads can only come from Redis.
    const oldCerts = join(fleet.panelDataDir, 'certificates')
    expect(existsSync(oldCerts)).toBe(true)
    renameSync(oldCerts, join(fleet.panelDataDir, 'certificates.before-redis'))
    const second = fleet.nodes[1]!
    await second.restart()
    // The loop gives it the current configuration (its bootstrap has none).
    await eventually(
      async () => JSON.stringify(await second.getConfig()),
      (c) => c.includes('panel_redis') && c.includes(DOMAIN),
      20_000,
    )
    const seen = await eventually(
      () => fleet.presentedBy(1, DOMAIN),
      (c) => c?.fingerprint256 === served,
      20_000,
      200,
    )
    expect(seen?.fingerprint256).toBe(served)
    expect(fleet.issued()).toBe(1)
    expect(existsSync(oldCerts)).toBe(false)
  }, 60_000)
})
