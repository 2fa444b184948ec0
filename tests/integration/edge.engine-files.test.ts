import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshRequest } from '../support/admin-http'
import { LAPI_USER_AGENT, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { sessionApi } from '../support/api-client'

// Every state of every file the panel writes into the engine's folders, reached
// through the panel's API, survives a real restart of the whole engine (agent,
// local API and AppSec with deploy/crowdsec's configuration): the engine reads
// these files only at start (or reload) and refuses to start on a bad one.

let cs: CrowdsecHandle
let panel: PanelHandle
let admin: string
const api = sessionApi(() => ({ panel, cookie: admin }))
const whitelistFile = () => join(cs.configDir, 'parsers/s02-enrich/panel-whitelist.yaml')
const tuningFile = () => join(cs.dataDir, 'crs-plugins/panel/panel-config.conf')
const auditCount = async (action: string) =>
  Number((await panel.db().execute({ sql: 'SELECT count(*) AS n FROM logs WHERE message = ?', args: [action] })).rows[0]!.n)

beforeAll(async () => {
  cs = await startCrowdsec({ appsec: true })
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  panel = await startPanel({ env: panelEnvFor(cs) })
  admin = await panel.login()
  // The panel re-derives the engine files at boot, the tuning file after the whitelist: once it exists, the whitelist step ran.
  await eventually(
    async () => existsSync(tuningFile()),
    (x) => x,
    10_000,
    100,
  )
})
afterAll(async () => {
  await panel?.stop()
  await cs?.stop()
})

/**
 * Restarts the real engine and checks it came up: the harness waits for the
 * local API's /health, the agent's "Starting processing data" line and the
 * AppSec listener, and throws otherwise. Returns the start's log, which names
 * what the engine loaded (parser nodes and their files, buckets, AppSec rules).
 * `crowdsec -t` prints the same lines from the same loading code: it is run once,
 * in the last case, not after every start (it cost as long as a start).
 */
async function restartAndExpectUp(): Promise<string> {
  const logBefore = readFileSync(cs.logFile, 'utf8').length
  const pidBefore = cs.pid
  await cs.restart()
  expect(cs.pid).not.toBe(pidBefore)
  const health = await freshRequest(`${cs.url}/health`, { headers: { 'user-agent': LAPI_USER_AGENT } })
  expect(health.status).toBe(200)
  expect(health.body).toContain('"up"')
  const started = readFileSync(cs.logFile, 'utf8').slice(logBefore)
  expect(started).toContain('Starting processing data')
  expect(started).not.toMatch(/level=fatal/)
  return started
}

/** Asks the engine's AppSec listener directly (as the bouncer does), from loopback. */
function askAppsec(uri: string, userAgent: string, extra: Record<string, string> = {}) {
  return freshRequest(cs.appsecUrl!, {
    headers: {
      'x-crowdsec-appsec-ip': '198.51.100.9',
      'x-crowdsec-appsec-uri': uri,
      'x-crowdsec-appsec-host': 'shop.example.test',
      'x-crowdsec-appsec-verb': 'GET',
      'x-crowdsec-appsec-api-key': cs.bouncerKey,
      'x-crowdsec-appsec-user-agent': userAgent,
      ...extra,
    },
  })
}

describe('the parser whitelist', () => {
  it('empty at boot: the panel writes no file (an empty whitelist node stops the engine), and the engine restarts', async () => {
    expect((await api('/api/security/whitelist')).json.entries).toEqual([])
    expect(existsSync(whitelistFile())).toBe(false)
    const output = await restartAndExpectUp()
    expect(output).not.toContain('panel-whitelist.yaml')
  })

  it('only an address: the engine loads it after a restart', async () => {
    expect((await api('/api/security/whitelist', 'POST', { value: '198.51.100.140' })).status).toBe(201)
    expect(readFileSync(whitelistFile(), 'utf8')).toContain('ip: ["198.51.100.140"]')
    expect(await restartAndExpectUp()).toMatch(/Loaded 1 parser nodes.*panel-whitelist\.yaml/)
  })

  it('an address and a network: loads', async () => {
    expect((await api('/api/security/whitelist', 'POST', { value: '198.51.100.192/27' })).status).toBe(201)
    expect(await restartAndExpectUp()).toMatch(/Loaded 1 parser nodes.*panel-whitelist\.yaml/)
  })

  it('only a network: loads', async () => {
    expect((await api('/api/security/whitelist/198.51.100.140', 'DELETE')).status).toBe(204)
    const file = readFileSync(whitelistFile(), 'utf8')
    expect(file).toContain('cidr: ["198.51.100.192/27"]')
    expect(file).toContain('ip: []')
    expect(await restartAndExpectUp()).toMatch(/Loaded 1 parser nodes.*panel-whitelist\.yaml/)
  })

  it('every entry removed: the file goes, and the engine restarts', async () => {
    expect((await api('/api/security/whitelist/198.51.100.192%2F27', 'DELETE')).status).toBe(204)
    expect(existsSync(whitelistFile())).toBe(false)
    expect(await restartAndExpectUp()).not.toContain('panel-whitelist.yaml')
    expect(await auditCount('whitelist_add')).toBe(2)
    expect(await auditCount('whitelist_delete')).toBe(2)
  })
})

describe('scenarios', () => {
  it('every hub scenario disabled through the API: no scenario link left, and the engine restarts', async () => {
    const listed = (await api('/api/security/scenarios')).json.scenarios as Array<{
      canonical_name: string
      source: string
      disabled: boolean
    }>
    const hub = listed.filter((s) => s.source === 'hub' && !s.disabled)
    expect(hub.length).toBeGreaterThan(20) // the caddy collection's scenarios
    for (const s of hub) {
      const res = await api(`/api/security/scenarios/${encodeURIComponent(s.canonical_name)}`, 'PATCH', { disabled: true })
      expect(res.status, `${s.canonical_name}: ${res.text}`).toBe(200)
    }
    // Local scenarios (deploy/crowdsec's own) are the engine folder's business, not the panel's.
    const local = listed.find((s) => s.source === 'local')!
    expect((await api(`/api/security/scenarios/${encodeURIComponent(local.canonical_name)}`, 'PATCH', { disabled: true })).status).toBe(400)
    const dir = join(cs.configDir, 'scenarios')
    expect(readdirSync(dir).filter((f) => lstatSync(join(dir, f)).isSymbolicLink())).toEqual([])
    expect((await api('/api/security/scenarios')).json.disabled_count).toBe(hub.length)
    expect(await auditCount('scenario_disable')).toBe(hub.length)
    const output = await restartAndExpectUp()
    expect(output).not.toMatch(/name=crowdsecurity\//)
  })
})

describe('true_detect_mode profiles', () => {
  it('a host in true_detect_mode: its profile is in profiles.yaml and the local API starts on it', async () => {
    const group = (await api('/api/target-groups', 'POST', { name: 'g', targets: [{ address: '127.0.0.1:9' }] })).json
    const host = await api('/api/hosts', 'POST', {
      domain: 'quiet.example.test',
      target_group_id: group.id,
      tls_mode: 'none',
      true_detect_mode: true,
    })
    expect(host.status).toBe(201)
    expect(readFileSync(join(cs.configDir, 'profiles.yaml'), 'utf8')).toContain(`name: panel_true_detect_host_${host.json.id}`)
    await restartAndExpectUp()
  })
})

describe('AppSec tuning', () => {
  it("the tuning file is loaded by the engine's AppSec rules: a new threshold blocks after a restart", async () => {
    // A scanner user agent scores 3 in deploy/crowdsec's rules: under the default threshold of 5.
    // No X-Panel-Appsec-Threshold header here: the value comes from the file alone.
    expect((await askAppsec('/search?q=shoes', 'sqlmap/1.7')).status).toBe(200)
    const res = await api('/api/security/appsec-tuning', 'PUT', { inbound_threshold: 3, outbound_threshold: 2 })
    expect(res.status).toBe(200)
    expect(readFileSync(tuningFile(), 'utf8')).toContain('tx.inbound_anomaly_score_threshold=3,')
    const output = await restartAndExpectUp()
    expect(output).toMatch(/loading inband rule panel\/appsec-threshold/)
    // The engine's own configuration test accepts the files the panel wrote (whitelist, scenarios, profiles, tuning).
    const test = await cs.testConfig()
    expect(test.ok, test.output).toBe(true)
    expect(test.output).toMatch(/loading inband rule panel\/appsec-threshold/)
    expect((await askAppsec('/search?q=shoes', 'sqlmap/1.7')).status).toBe(403)
    expect((await askAppsec('/search?q=shoes', 'curl/8.0')).status).toBe(200)
    expect(await auditCount('settings_update')).toBe(1)
  })
})
