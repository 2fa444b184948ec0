import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCrowdsec } from '../support/crowdsec'
import { startCaddy } from '../support/caddy'
import { freePort } from '../support/ports'
import { startPebble } from '../support/pebble'

// The harness itself: each real component starts on free loopback ports and answers.
// (Caddy with Pebble and the network namespace are exercised by the proxy.* tests.)

const UA = { 'user-agent': 'panel-test/1.0' } // the LAPI refuses a User-Agent not shaped name/version

describe('CrowdSec local API', () => {
  let cs: Awaited<ReturnType<typeof startCrowdsec>>
  beforeAll(async () => { cs = await startCrowdsec() })
  afterAll(async () => { await cs?.stop() })

  async function login() {
    const res = await fetch(`${cs.url}/v1/watchers/login`, {
      method: 'POST', headers: { ...UA, 'content-type': 'application/json' },
      body: JSON.stringify({ machine_id: cs.machineId, password: cs.machinePassword }),
    })
    expect(res.status).toBe(200)
    return (await res.json()).token as string
  }

  it('takes an alert with a Range decision from the machine and serves it to the bouncer', async () => {
    const token = await login()
    const now = new Date().toISOString()
    const alert = [{
      scenario: 'panel/smoke', scenario_hash: '', scenario_version: '', message: 'smoke', events_count: 1,
      start_at: now, stop_at: now, capacity: 0, leakspeed: '0', simulated: false, events: [],
      source: { scope: 'Range', value: '198.51.100.0/28' },
      decisions: [{ origin: 'panel-country-ZZ', type: 'ban', scope: 'Range', value: '198.51.100.0/28', duration: '1h', scenario: 'panel/smoke' }],
    }]
    const posted = await fetch(`${cs.url}/v1/alerts`, { method: 'POST', headers: { ...UA, authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(alert) })
    expect(posted.status).toBe(201)
    const read = await fetch(`${cs.url}/v1/decisions?ip=198.51.100.5`, { headers: { ...UA, 'x-api-key': cs.bouncerKey } })
    const decisions = await read.json()
    expect(decisions).toHaveLength(1)
    expect(decisions[0]).toMatchObject({ origin: 'panel-country-ZZ', scope: 'Range', value: '198.51.100.0/28' })
  })

  it('keeps machine tokens valid across a restart (fixed JWT secret)', async () => {
    const token = await login()
    await cs.restart()
    const res = await fetch(`${cs.url}/v1/alerts?limit=1`, { headers: { ...UA, authorization: `Bearer ${token}` } })
    expect(res.status).toBe(200)
  })
})

describe('Caddy and Pebble', () => {
  it('start on free ports and answer on their APIs', async () => {
    const caddy = await startCaddy()
    const [httpPort, tlsPort] = [await freePort(), await freePort()]
    const pebble = await startPebble({ httpPort, tlsPort })
    try {
      const cfg = await caddy.getConfig() as any
      expect(cfg.admin.listen).toBe(caddy.adminListen)
      expect(await pebble.issuingRootPem()).toMatch(/BEGIN CERTIFICATE/)
    } finally {
      await pebble.stop()
      await caddy.stop()
    }
  })
})
