import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFleet, normalSerial, type Fleet } from '../support/fleet'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { waitFor } from '../support/processes'
import { startRedisSentinelSet, type RedisSentinelSet } from '../support/redis'

// The storage failing over with an order in flight (docs/scaling.md, issue 41 item 3):
// three production Caddy nodes without a shared folder (fleet.ts, private file
// systems), their certificates in Redis behind Sentinel (Debian's redis-server
// and redis-sentinel: a primary, one replica, three Sentinels, passwords on both),
// and Pebble validating after a random sleep of 0 to 5 s (PEBBLE_VA_NOSLEEP=0),
// so the order is still open when the test kills the primary (SIGKILL) as soon as
// a node's ACME client says it is solving the challenge. Sentinel promotes the
// replica; the order ends with one certificate, which every node serves.
//
// What the test waits for before the kill, and why: the replica holds everything
// the primary acknowledged (same replication offset). Redis replicates
// asynchronously, so a kill just after a write may lose it (the order's lock, its
// challenge): then a second order is possible (docs/scaling.md says what a
// failover can lose). The test shows the case Sentinel guarantees, nothing lost.

const REDIS_PASSWORD = 'redis-pw-Failover-41-3f1e'
const SENTINEL_PASSWORD = 'sentinel-pw-Failover-41-88b2'

let fleet: Fleet
let set: RedisSentinelSet

const solving = (file: string, domain: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .some((l) => l.includes('"trying to solve challenge"') && l.includes(`"${domain}"`))
const certKey = (domain: string) => `fo/certificates/*/${domain}/${domain}.crt`

beforeAll(async () => {
  fleet = await startFleet({ privateFs: true, pebbleEnv: { PEBBLE_VA_NOSLEEP: '0', PEBBLE_VA_SLEEPTIME: '6' } })
  registerTestSecret(REDIS_PASSWORD)
  registerTestSecret(SENTINEL_PASSWORD)
  set = await startRedisSentinelSet({
    addresses: [fleet.machines[0]!.hostAddress],
    password: REDIS_PASSWORD,
    sentinelPassword: SENTINEL_PASSWORD,
    sentinels: 3,
  })
  await set.waitInSync()
  const put = await fleet.api('/api/settings', 'PUT', {
    'proxy.storage': {
      module: 'redis',
      mode: 'sentinel',
      addresses: set.sentinelAddresses,
      sentinel_master: set.masterName,
      key_prefix: 'fo',
    },
    'proxy.storage.redis_password': REDIS_PASSWORD,
    'proxy.storage.sentinel_password': SENTINEL_PASSWORD,
  })
  expect(put.status, put.text).toBe(200)
  // The panel looks at each node's storage every 10 s: wait for a look at the new one.
  await eventually(
    fleet.listNodes,
    (l) => l.every((n) => n.status.in_sync === true && n.storage.module === 'panel_redis' && n.storage.ok === true),
    30_000,
  )
}, 180_000)

afterAll(async () => {
  await fleet?.stop()
  await set?.stop()
})

describe('Sentinel failover with an order in flight', () => {
  it('every node reaches the storage through Sentinel', async () => {
    for (const node of fleet.nodes)
      expect(((await node.getConfig()) as any).storage).toMatchObject({
        module: 'panel_redis',
        mode: 'sentinel',
        addresses: set.sentinelAddresses,
        sentinel_master: set.masterName,
        password: REDIS_PASSWORD,
        sentinel_password: SENTINEL_PASSWORD,
      })
    const nodes = await fleet.listNodes()
    for (const n of nodes) expect(n.storage).toMatchObject({ module: 'panel_redis', ok: true })
    expect(await set.currentPrimary()).toBe(set.primary.address)
  })

  it('ends with one certificate obtained after the primary dies mid-order, served by every node', async () => {
    // A new host until its order is caught open: a node's ACME client is solving the challenge and
    // Pebble has issued nothing for it. Pebble's sleep is a whole number of seconds, 0 one time in
    // six: then the order may end before the test looks, and the next host is tried (the primary
    // still up; that host's certificate counts as one issued).
    let domain = ''
    let issuedBefore = 0
    for (let attempt = 1; attempt <= 4 && !domain; attempt++) {
      const name = `failover-${attempt}.example.test`
      issuedBefore = fleet.issued()
      await fleet.createAcmeHost(name)
      await waitFor(async () => fleet.nodes.some((n) => solving(n.logFile, name)), {
        timeoutMs: 30_000,
        what: `a node solving the challenge of ${name}`,
      })
      await set.waitInSync(5_000)
      if (fleet.issued() === issuedBefore && (await set.primary.cli(['--scan', '--pattern', certKey(name)])) === '') domain = name
      else
        await eventually(
          () => Promise.resolve(fleet.issued()),
          (n) => n === issuedBefore + 1,
          10_000,
        )
    }
    expect(domain, 'an order caught open in four attempts').not.toBe('')
    const killed = await set.killPrimary()
    expect(killed).toBe(set.primary)

    await set.waitForPrimary(set.replica)
    // certmagic retries a failed step (a lock or a read during the switch-over) after a minute.
    const certs = await eventually(
      () => Promise.all([0, 1, 2].map((k) => fleet.presentedBy(k, domain))),
      (c) => c.every((x) => !!x && /Pebble/.test(x.issuer)),
      150_000,
      500,
    )
    expect(certs.map((c) => c?.subject)).toEqual([domain, domain, domain])
    expect(new Set(certs.map((c) => c!.fingerprint256)).size).toBe(1)
    expect(fleet.issued()).toBe(issuedBefore + 1)
    expect(normalSerial(certs[0]!.serialNumber)).toBe(fleet.lastSerialIssued())
    // The certificate is on the promoted server, which the Sentinels name.
    expect(await set.replica.cli(['--scan', '--pattern', certKey(domain)])).toContain(`/${domain}/${domain}.crt`)
    expect(await set.currentPrimary()).toBe(set.replica.address)
    // And every node's storage is healthy again, on the new primary.
    const nodes = await eventually(fleet.listNodes, (l) => l.every((n) => n.storage.ok === true), 30_000, 500)
    expect(nodes.map((n) => n.storage.ok)).toEqual([true, true, true])
  }, 200_000)
})
