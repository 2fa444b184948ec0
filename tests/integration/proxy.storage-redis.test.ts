import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshRequest } from '../support/admin-http'
import { REPO_ROOT } from '../support/build'
import { createTestPki } from '../support/certs'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { presentedCertificate } from '../support/http'
import { freePorts } from '../support/ports'
import { waitFor } from '../support/processes'
import { startRedis, startRedisCluster, type RedisCluster, type RedisHandle } from '../support/redis'

// The production Caddy's certificate storage on Redis (caddy.storage.panel_redis,
// deploy/proxy/caddy/storageext) against a real redis-server, and what a node's admin
// API tells about its storage (admin.api.panel_storage). Two Caddy processes, each
// in a folder of its own (no shared folder), share one Redis; certificates come from
// Caddy's internal issuer, whose CA lives in the same storage (one CA for both).

const PASSWORD = 'redis-pass-4f1c9e7a2b'
const ENCRYPTION_KEY = 'storage-key-8d2e6b1f3a9c5d7e'
const PREFIX = 'fleet-7'
const SECRETS = [PASSWORD, ENCRYPTION_KEY]

let redis: RedisHandle
let a: CaddyHandle
let b: CaddyHandle
let c: CaddyHandle
let portA: number
let portB: number

const storage = (over: Record<string, unknown> = {}) => ({
  module: 'panel_redis',
  addresses: [redis.address],
  password: PASSWORD,
  key_prefix: PREFIX,
  encryption_key: ENCRYPTION_KEY,
  ...over,
})

/** One HTTPS server for `names`, certificates from the internal CA kept in the storage. */
function config(node: CaddyHandle, port: number, names: string[], store: object = storage()) {
  return {
    admin: { listen: node.adminListen, config: { persist: false } },
    storage: store,
    apps: {
      // The CA's root would otherwise be installed into this machine's trust store.
      pki: { certificate_authorities: { local: { install_trust: false } } },
      http: {
        https_port: port,
        servers: {
          s: {
            listen: [`127.0.0.1:${port}`],
            automatic_https: { disable_redirects: true },
            routes: [{ match: [{ host: names }], handle: [{ handler: 'static_response', body: 'ok' }] }],
          },
        },
      },
      tls: { automation: { policies: [{ subjects: names, issuers: [{ module: 'internal' }] }] } },
    },
  }
}

/**
 * Every /load starts a new admin server on the same port and shuts the old one down
 * afterwards (Caddy's replaceLocalAdminServer); a connection the kernel queued on the
 * old listening socket in between is reset. A reset request is sent once more: both
 * are safe to repeat (a GET, or loading the same configuration again).
 */
async function again<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send()
  } catch (err) {
    if (!/socket hang up|ECONNRESET/.test(String((err as Error)?.message ?? err))) throw err
    return await send()
  }
}

const loadOn = (node: CaddyHandle, cfg: object, opts?: { force?: boolean }) => again(() => node.load(cfg, opts))

async function load(node: CaddyHandle, cfg: object) {
  const res = await loadOn(node, cfg)
  expect(res.status, res.body).toBe(200)
}

async function served(port: number, name: string): Promise<string> {
  let serial = ''
  await waitFor(
    async () => {
      const cert = await presentedCertificate(port, name, '')
      // Caddy answers with no certificate (handshake failure) until it has one for the name.
      if (!cert?.sans.includes(`DNS:${name}`)) return false
      serial = cert.serialNumber
      return true
    },
    { timeoutMs: 30_000, what: `a certificate for ${name} on 127.0.0.1:${port}` },
  )
  return serial
}

async function adminGet(node: CaddyHandle, path: string) {
  const res = await again(() => freshRequest(`${node.adminUrl}${path}`))
  return { status: res.status, body: res.body, json: JSON.parse(res.body) }
}

const logOf = (node: CaddyHandle) => readFileSync(node.logFile, 'utf8')
/** certmagic's line for a certificate it obtained (not one it loaded from the storage). */
const obtained = (node: CaddyHandle, name: string) =>
  logOf(node)
    .split('\n')
    .filter((l) => l.includes('certificate obtained successfully') && l.includes(`"identifier":"${name}"`)).length

beforeAll(async () => {
  redis = await startRedis({ password: PASSWORD })
  ;[a, b, c] = await Promise.all([startCaddy(), startCaddy(), startCaddy()])
  ;[portA, portB] = await freePorts(2)
})
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), c?.stop()])
  await redis?.stop()
})

describe('caddy.storage.panel_redis with a real redis-server', () => {
  let serialA = ''

  it("the storage's Go tests against this Redis: the file storage's answers, and locks between two nodes", async () => {
    // The flags of deploy/proxy/caddy/build.sh, whose own run skips these tests (the image build has no Redis).
    const { stdout } = await promisify(execFile)(
      'go',
      ['test', '-count=1', '-tags', 're2_cgo,memoize_builders,netgo,osusergo', '-run', '^TestRedis', '-v', './storageext/'],
      {
        cwd: join(REPO_ROOT, 'deploy/proxy/caddy'),
        env: {
          ...process.env,
          CGO_ENABLED: '1',
          GOFLAGS: '-mod=readonly',
          PANEL_TEST_REDIS_ADDR: redis.address,
          PANEL_TEST_REDIS_PASSWORD: PASSWORD,
        },
        maxBuffer: 16 << 20,
      },
    )
    expect(stdout).toContain('--- PASS: TestRedisAnswersLikeFileStorage')
    expect(stdout).toContain('--- PASS: TestRedisLocks')
    expect(stdout).not.toContain('SKIP')
  }, 300_000)

  it('keeps the certificate, sealed, under the key prefix', async () => {
    await load(a, config(a, portA, ['one.storage.test']))
    serialA = await served(portA, 'one.storage.test')
    const keys = (await redis.cli(['--scan', '--pattern', '*'])).trim().split('\n').filter(Boolean).sort()
    const crt = `${PREFIX}/certificates/local/one.storage.test/one.storage.test.crt`
    expect(keys).toContain(crt)
    expect(keys).toContain(`${PREFIX}/certificates/local/one.storage.test/one.storage.test.key`)
    expect(keys).toContain(`${PREFIX}/pki/authorities/local/root.crt`)
    // Nothing outside the prefix.
    expect(keys.filter((k) => !k.startsWith(`${PREFIX}/`))).toEqual([])
    // Each key is a hash: the value, its modification time and its size.
    expect((await redis.cli(['hkeys', crt])).trim().split('\n').sort()).toEqual(['m', 's', 'v'])
    const sealed = await redis.cli(['hget', crt, 'v'])
    expect(sealed.length).toBeGreaterThan(100)
    expect(sealed).not.toContain('BEGIN')
    const privateKey = await redis.cli(['hget', `${PREFIX}/certificates/local/one.storage.test/one.storage.test.key`, 'v'])
    expect(privateKey).not.toContain('PRIVATE KEY')
  })

  it('a second node with no shared folder serves the same certificate without issuing one', async () => {
    expect(a.workDir).not.toBe(b.workDir)
    await load(b, config(b, portB, ['one.storage.test']))
    expect(await served(portB, 'one.storage.test')).toBe(serialA)
    expect(obtained(a, 'one.storage.test')).toBe(1)
    expect(obtained(b, 'one.storage.test')).toBe(0)
  })

  it('answers GET /panel/storage/health and /panel/storage/certificates', async () => {
    const health = await adminGet(a, '/panel/storage/health')
    expect(health.status).toBe(200)
    expect(health.json).toMatchObject({
      module: 'panel_redis',
      ok: true,
      error: null,
      detail: `redis ${redis.address} db 0, keys ${PREFIX}/, values encrypted`,
    })
    expect(typeof health.json.latency_ms).toBe('number')
    // The probe key is gone.
    expect((await redis.cli(['--scan', '--pattern', `${PREFIX}/panel-health/*`])).trim()).toBe('')

    const listed = await adminGet(b, '/panel/storage/certificates')
    expect(listed.status).toBe(200)
    const cert = await presentedCertificate(portB, 'one.storage.test', '')
    expect(listed.json.certificates).toEqual([
      {
        key: 'certificates/local/one.storage.test/one.storage.test.crt',
        name: 'one.storage.test',
        issuer_key: 'local',
        not_after: new Date(cert!.validTo).toISOString().replace('.000Z', 'Z'),
        issuer: expect.stringContaining('Caddy Local Authority'),
      },
    ])
    for (const s of SECRETS) expect(health.body + listed.body).not.toContain(s)
    expect((await freshRequest(`${a.adminUrl}/panel/storage/health`, { method: 'POST', body: '{}' })).status).toBe(405)
  })

  it('two nodes racing for a new name: the lock lets one issue, and both serve that one', async () => {
    const names = ['one.storage.test', 'race.storage.test']
    await Promise.all([load(a, config(a, portA, names)), load(b, config(b, portB, names))])
    const [sa, sb] = await Promise.all([served(portA, 'race.storage.test'), served(portB, 'race.storage.test')])
    expect(sa).toBe(sb)
    expect(obtained(a, 'race.storage.test') + obtained(b, 'race.storage.test')).toBe(1)
    // The lock is released (deleted by its holder), not left to expire.
    await waitFor(async () => (await redis.cli(['--scan', '--pattern', `${PREFIX}/locks/*`])).trim() === '', {
      timeoutMs: 10_000,
      what: 'the issuance lock released',
    })
  })

  it('a lock another node holds blocks the issuance until it is released, or until it expires when its holder died', async () => {
    const lockKey = (name: string) => `${PREFIX}/locks/issue_cert_${name}`
    // Another node's locks, as it would hold them: one it releases, one whose holder died (no refresh).
    expect((await redis.cli(['set', lockKey('held.storage.test'), 'other-node', 'PX', '120000'])).trim()).toBe('OK')
    expect((await redis.cli(['set', lockKey('dead.storage.test'), 'dead-node', 'PX', '3000'])).trim()).toBe('OK')
    await load(a, config(a, portA, ['one.storage.test', 'race.storage.test', 'held.storage.test', 'dead.storage.test']))
    const waiting = (name: string) =>
      logOf(a)
        .split('\n')
        .filter((l) => l.includes(`"identifier":"${name}"`))
        .map((l) => JSON.parse(l).msg as string)
    await waitFor(async () => waiting('held.storage.test').includes('acquiring lock'), {
      timeoutMs: 10_000,
      what: 'node A asking for the held lock',
    })
    // A asks and waits: the other node's lock is untouched and nothing is issued for the name.
    expect((await redis.cli(['get', lockKey('held.storage.test')])).trim()).toBe('other-node')
    expect(waiting('held.storage.test')).not.toContain('lock acquired')
    expect(obtained(a, 'held.storage.test')).toBe(0)
    // The holder that died: its lock expires and A goes on.
    await served(portA, 'dead.storage.test')
    expect(obtained(a, 'dead.storage.test')).toBe(1)
    // Released by its holder: A takes it, issues once and releases it.
    expect((await redis.cli(['del', lockKey('held.storage.test')])).trim()).toBe('1')
    await served(portA, 'held.storage.test')
    expect(obtained(a, 'held.storage.test')).toBe(1)
    await waitFor(async () => (await redis.cli(['--scan', '--pattern', `${PREFIX}/locks/*`])).trim() === '', {
      timeoutMs: 10_000,
      what: 'the issuance locks released',
    })
  })

  it('a wrong password: the configuration loads, and the health says authentication failed without the password', async () => {
    const wrong = 'wrong-pass-0c3e5a7f9b'
    const res = await loadOn(c, { admin: { listen: c.adminListen, config: { persist: false } }, storage: storage({ password: wrong }) })
    expect(res.status, res.body).toBe(200)
    const health = await adminGet(c, '/panel/storage/health')
    expect(health.json.ok).toBe(false)
    expect(health.json.module).toBe('panel_redis')
    expect(health.json.error).toContain('authentication failed')
    expect(health.json.error).toContain(redis.address)
    expect(health.body).not.toContain(wrong)
    expect(logOf(c)).not.toContain(wrong)
    const certs = await adminGet(c, '/panel/storage/certificates')
    expect(certs.status).toBe(503)
    expect(certs.json.error).toContain('authentication failed')
    expect(certs.body).not.toContain(wrong)
  })

  it('a refused storage setting names the field, never a secret', async () => {
    const res = await loadOn(c, {
      admin: { listen: c.adminListen, config: { persist: false } },
      storage: storage({ mode: 'sentinel' }),
    })
    expect(res.status).toBe(400)
    expect(res.body).toContain('storage panel_redis: sentinel mode needs sentinel_master')
    for (const s of SECRETS) expect(res.body).not.toContain(s)
  })

  it('over TLS: the CA and the name given are checked, and a server they do not vouch for is refused in words', async () => {
    const pki = createTestPki()
    const leaf = pki.leaf('redis.storage.test')
    const certFile = join(pki.dir, 'redis-chain.pem')
    const keyFile = join(pki.dir, 'redis.key')
    const caFile = join(pki.dir, 'root.pem')
    writeFileSync(certFile, leaf.certPem + pki.intermediatePem)
    writeFileSync(keyFile, leaf.keyPem, { mode: 0o600 })
    const secure = await startRedis({ password: PASSWORD, tls: { certFile, keyFile, caFile, serverName: 'redis.storage.test' } })
    try {
      const over = (tls: object) =>
        loadOn(c, { admin: { listen: c.adminListen, config: { persist: false } }, storage: storage({ addresses: [secure.address], tls }) })
      let res = await over({ enabled: true, server_name: 'redis.storage.test', ca_pem: pki.rootPem })
      expect(res.status, res.body).toBe(200)
      let health = await adminGet(c, '/panel/storage/health')
      expect(health.json).toMatchObject({ ok: true, detail: `redis ${secure.address} db 0 over TLS, keys ${PREFIX}/, values encrypted` })
      // The probe's write went over TLS into this server.
      expect(await secure.cli(['info', 'commandstats'])).toMatch(/^cmdstat_hset:calls=[1-9]/m)

      // The system's roots do not include the test CA.
      res = await over({ enabled: true, server_name: 'redis.storage.test' })
      expect(res.status, res.body).toBe(200)
      health = await adminGet(c, '/panel/storage/health')
      expect(health.json.ok).toBe(false)
      expect(health.json.error).toContain('certificate signed by unknown authority')
      expect(health.json.error).toContain(secure.address)

      // A name the certificate does not carry.
      res = await over({ enabled: true, server_name: 'other.storage.test', ca_pem: pki.rootPem })
      expect(res.status, res.body).toBe(200)
      health = await adminGet(c, '/panel/storage/health')
      expect(health.json.ok).toBe(false)
      expect(health.json.error).toContain('not other.storage.test')

      // Plain Redis protocol against the TLS port is not mistaken for a storage.
      res = await over({})
      expect(res.status, res.body).toBe(200)
      expect((await adminGet(c, '/panel/storage/health')).json.ok).toBe(false)
      for (const s of SECRETS) expect(logOf(c)).not.toContain(s)
    } finally {
      await secure.stop()
    }
  })

  it('Redis stopped: health says so naming the address, the node still serves what it holds', async () => {
    await redis.stop()
    const health = await adminGet(a, '/panel/storage/health')
    expect(health.status).toBe(200)
    expect(health.json.ok).toBe(false)
    expect(health.json.error).toMatch(/^redis storage: store panel-health\/\w+: /)
    expect(health.json.error).toContain(redis.address)
    const certs = await adminGet(a, '/panel/storage/certificates')
    expect(certs.status).toBe(503)
    expect(certs.json.error).toContain(redis.address)
    expect(await served(portA, 'one.storage.test')).toBe(serialA)
    expect(await served(portB, 'one.storage.test')).toBe(serialA)
    // A push while the storage is down still loads (the module does not reach Redis to load).
    const res = await loadOn(c, { admin: { listen: c.adminListen, config: { persist: false } }, storage: storage() }, { force: true })
    expect(res.status, res.body).toBe(200)
    for (const node of [a, b, c]) for (const s of SECRETS) expect(logOf(node)).not.toContain(s)
    for (const s of SECRETS) expect(health.body + certs.body).not.toContain(s)
  })
})

describe('caddy.storage.panel_redis on a Redis Cluster (three primaries)', () => {
  let cluster: RedisCluster
  let portC: number
  const NAMES = ['c1.storage.test', 'c2.storage.test', 'c3.storage.test', 'c4.storage.test', 'c5.storage.test', 'c6.storage.test']
  const onCluster = () => storage({ mode: 'cluster', addresses: [cluster.addresses[0]] })

  beforeAll(async () => {
    cluster = await startRedisCluster({ password: PASSWORD })
    ;[portC] = await freePorts(1)
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('two nodes told one primary issue each name once and serve the same certificates, the keys spread over the primaries', async () => {
    // The other nodes' folders are gone with the single Redis: fresh nodes, one address of the cluster each.
    await load(a, config(a, portA, NAMES, onCluster()))
    await load(c, config(c, portC, NAMES, onCluster()))
    for (const name of NAMES) {
      const [sa, sc] = await Promise.all([served(portA, name), served(portC, name)])
      expect(sc, name).toBe(sa)
      expect(obtained(a, name) + obtained(c, name), name).toBe(1)
    }
    // The cluster hashes each key to a slot: certificates land on more than one primary.
    const perPrimary = await Promise.all(cluster.masters.map(async (m) => Number(await m.cli(['DBSIZE']))))
    expect(perPrimary.filter((n) => n > 0).length).toBeGreaterThan(1)
    const sealed = await cluster.masters[0]!.cli(['--scan', '--pattern', `${PREFIX}/*`])
    expect(sealed.length).toBeGreaterThan(0)
  })

  it('lists the certificates of every primary, and its health names the cluster', async () => {
    const listed = await adminGet(c, '/panel/storage/certificates')
    expect(listed.status, listed.body).toBe(200)
    expect(listed.json.certificates.map((x: { name: string }) => x.name).sort()).toEqual(NAMES)
    const health = await adminGet(a, '/panel/storage/health')
    expect(health.json).toMatchObject({ module: 'panel_redis', ok: true, error: null })
    expect(health.json.detail).toContain('cluster')
    for (const s of SECRETS) expect(health.body + listed.body + logOf(a) + logOf(c)).not.toContain(s)
    // The issuance locks are released on whichever primary held them.
    for (const m of cluster.masters) expect(await m.cli(['--scan', '--pattern', `${PREFIX}/locks/*`])).toBe('')
  })
})
