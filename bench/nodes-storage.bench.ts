import { afterAll, beforeAll, expect, it } from 'vitest'
import { startFleet, type Fleet } from '../tests/support/fleet'
import { eventually } from '../tests/support/http'
import { registerTestSecret } from '../tests/support/panel'
import { startRedisServer, type RedisProcess } from '../tests/support/redis'
import { median, ratioOf, reportFigures } from './report'

// Issue 41: the first certificate of a new host on three production Caddy nodes
// (each in a network namespace of its own), with the certificates in Redis against
// the shared folder (file_system, PROXY_DATA_DIR), in the same run: the storage is
// switched with PUT /api/settings before each measure, the order alternating
// (file system first in even rounds, Redis first in odd ones). The time runs from
// POST /api/hosts (the build, the transaction, the roll to three nodes) until every
// node presents the certificate Pebble issued (Pebble validating at once,
// PEBBLE_VA_NOSLEEP=1). Each host is deleted after its measure.
const ROUNDS = 5
const REDIS_PASSWORD = 'redis-pw-Bench-41-5d2e'

let fleet: Fleet
let redis: RedisProcess
let n = 0

const storages = {
  file_system: () => ({ 'proxy.storage': { module: 'file_system' } }),
  redis: () => ({
    'proxy.storage': { module: 'redis', mode: 'single', addresses: [redis.address], key_prefix: 'bench' },
    'proxy.storage.redis_password': REDIS_PASSWORD,
  }),
}

beforeAll(async () => {
  fleet = await startFleet({ privateFs: false })
  registerTestSecret(REDIS_PASSWORD)
  redis = await startRedisServer({ addresses: [fleet.machines[0]!.hostAddress], password: REDIS_PASSWORD })
}, 300_000)
afterAll(async () => {
  await fleet?.stop()
  await redis?.stop()
})

/** Switches the storage, then times one new host's first certificate on all three nodes (ms). */
async function firstCertificate(storage: keyof typeof storages): Promise<number> {
  const put = await fleet.api('/api/settings', 'PUT', storages[storage]())
  expect(put.status, put.text).toBe(200)
  const module = storage === 'redis' ? 'panel_redis' : 'file_system'
  for (const node of fleet.nodes) expect(((await node.getConfig()) as any).storage.module).toBe(module)
  const domain = `b${++n}-${storage.replace('_', '')}.bench.test`
  const t0 = performance.now()
  const host = await fleet.createAcmeHost(domain)
  const certs = await eventually(
    () => Promise.all([0, 1, 2].map((k) => fleet.presentedBy(k, domain))),
    (c) => c.every((x) => !!x && /Pebble/.test(x.issuer)),
    120_000,
    50,
  )
  const ms = performance.now() - t0
  expect(new Set(certs.map((c) => c?.fingerprint256)).size).toBe(1)
  expect((await fleet.api(`/api/hosts/${host.id}`, 'DELETE')).status).toBeLessThan(300)
  return ms
}

it('first certificate of a new host on three nodes: Redis against the shared folder', async () => {
  // Warm-up: each storage once (the ACME account is made on the first order in each storage).
  await firstCertificate('file_system')
  await firstCertificate('redis')
  const samples = { file_system: [] as number[], redis: [] as number[] }
  for (let r = 0; r < ROUNDS; r++) {
    const order: Array<keyof typeof storages> = r % 2 === 0 ? ['file_system', 'redis'] : ['redis', 'file_system']
    for (const s of order) samples[s].push(await firstCertificate(s))
  }
  const fs = median(samples.file_system)
  const rd = median(samples.redis)
  console.log(
    `samples (ms): file system ${samples.file_system.map(Math.round).join(', ')}; Redis ${samples.redis.map(Math.round).join(', ')}`,
  )
  reportFigures('nodes-storage', [
    { what: 'first certificate, three nodes, shared folder', value: Math.round(fs), unit: 'ms', budget: '-', withinBudget: true },
    {
      what: 'first certificate, three nodes, Redis',
      value: Math.round(rd),
      unit: 'ms',
      budget: '-',
      withinBudget: true,
      ratio: ratioOf(rd, fs, `shared folder, ${Math.round(fs)} ms`, '<= 1.5'),
    },
  ])
}, 900_000)
