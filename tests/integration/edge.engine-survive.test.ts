import { lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshRequest } from '../support/admin-http'
import { LAPI_USER_AGENT, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { sessionApi } from '../support/api-client'

// "Choices that survive": what the engine's own start does (the image's
// collection install and hub upgrade put every scenario of the caddy collection
// back), what a hand edit does, and what the panel does about it, with the real
// engine (agent, local API, AppSec). The drift detector runs every second here.
// The image's start script itself cannot run on this machine (no container
// engine): its scenario steps are reproduced with the real cscli.

const PROBING = 'crowdsecurity/http-probing'
let cs: CrowdsecHandle
let panel: PanelHandle
let admin: string
const env = () => ({ ...panelEnvFor(cs), PANEL_DRIFT_INTERVAL_SECONDS: '1' })
const api = sessionApi(() => ({ panel, cookie: admin }))
const probingLink = () => join(cs.configDir, 'scenarios/http-probing.yaml')
const present = (path: string) => lstatSync(path, { throwIfNoEntry: false }) !== undefined
const listFile = () => join(cs.configDir, 'panel-disabled-scenarios.txt')
const whitelistFile = () => join(cs.configDir, 'parsers/s02-enrich/panel-whitelist.yaml')
const profilesFile = () => join(cs.configDir, 'profiles.yaml')
const tuningFile = () => join(cs.dataDir, 'crs-plugins/panel/panel-config.conf')

/** The detector's audit rows for one target (a scenario name or a file path), oldest first. */
async function repairsOf(target: string): Promise<Array<{ actor: string; surface: string; target: string; repair: string }>> {
  const rows = (
    await panel.db().execute("SELECT actor, raw FROM logs WHERE source = 'audit' AND message = 'engine_drift_repair' ORDER BY id")
  ).rows
  return rows.map((r) => ({ actor: String(r.actor), ...JSON.parse(String(r.raw)) })).filter((r) => r.target === target)
}

/** Waits until the detector has written one more repair row for `target` than `before`. */
async function nextRepair(target: string, before: number) {
  const rows = await eventually(
    () => repairsOf(target),
    (r) => r.length > before,
    10_000,
    200,
  )
  expect(rows.length, `no engine_drift_repair row for ${target}`).toBe(before + 1)
  return rows.at(-1)!
}

async function startThePanel(dataDir?: string) {
  panel = await startPanel({ env: env(), dataDir })
  admin = await panel.login()
}

/** "Loaded N scenarios", from the engine's start log. */
const loadedCount = (log: string) => Number(/Loaded (\d+) scenarios/.exec(log)?.[1] ?? NaN)
let loadedWithoutProbing = NaN

/** The scenario names the hub reports installed (`cscli scenarios list -o json`). */
async function installedScenarios(): Promise<string[]> {
  return (JSON.parse(await cs.cscli(['scenarios', 'list', '-o', 'json'])).scenarios as Array<{ name: string }>).map((s) => s.name)
}

/**
 * Restarts the real engine and checks it came up (the harness waits for /health,
 * the agent's "Starting processing data" and the AppSec listener, and throws
 * otherwise). Returns the start's log, which names what the engine loaded. `crowdsec -t`
 * prints the same lines from the same loading code: it runs once, in the last case.
 */
async function restartAndExpectUp(): Promise<{ log: string }> {
  const logBefore = readFileSync(cs.logFile, 'utf8').length
  await cs.restart()
  const health = await freshRequest(`${cs.url}/health`, { headers: { 'user-agent': LAPI_USER_AGENT } })
  expect(health.status).toBe(200)
  const log = readFileSync(cs.logFile, 'utf8').slice(logBefore)
  expect(log).toContain('Starting processing data')
  expect(log).not.toMatch(/level=fatal/)
  return { log }
}

beforeAll(async () => {
  cs = await startCrowdsec({ appsec: true })
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  await startThePanel()
  // The detector's first check (at boot) writes the tuning file and the scenario list.
  await eventually(
    async () => present(tuningFile()) && present(listFile()),
    (x) => x,
    10_000,
    100,
  )
})
afterAll(async () => {
  await panel?.stop()
  await cs?.stop()
})

describe('a scenario disabled in the panel', () => {
  it("is removed again by the image's own start step (DISABLE_SCENARIOS fed from the panel's list) after its collection install put it back, with the panel down", async () => {
    const off = await api(`/api/security/scenarios/${encodeURIComponent(PROBING)}`, 'PATCH', { disabled: true })
    expect(off.status).toBe(200)
    expect(present(probingLink())).toBe(false)
    // The engine starts before the panel in the stack (and runs without it).
    await panel.stop()
    // What the image does first at every start: `cscli collections install` of COLLECTIONS
    // (and `cscli hub upgrade` when the collection has a newer version): every member enabled again.
    await cs.cscli(['collections', 'install', 'crowdsecurity/caddy'])
    expect(lstatSync(probingLink()).isSymbolicLink()).toBe(true)
    // What it does next with DISABLE_SCENARIOS, which the compose entrypoint reads from the
    // panel's list (comment lines dropped, tests/unit/deploy-files.test.ts runs that step):
    // `cscli scenarios remove <name> --force` for each name. cscli refuses a name its hub does not know.
    const names = readFileSync(listFile(), 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'))
    expect(names).toEqual([PROBING])
    for (const name of names) await cs.cscli(['scenarios', 'remove', name, '--force'])
    expect(present(probingLink())).toBe(false)
    const { log } = await restartAndExpectUp()
    expect(log).not.toMatch(/name=crowdsecurity\/http-probing/)
    expect(log).not.toContain(PROBING)
    expect(await installedScenarios()).not.toContain(PROBING)
    await startThePanel(panel.dataDir)
  })

  it('is removed again by the drift detector when a collection install puts it back while the panel runs, audited; the restarted engine does not load it', async () => {
    const before = (await repairsOf(PROBING)).length
    await cs.cscli(['collections', 'install', 'crowdsecurity/caddy'])
    // A repair row can only come from the link being back: the detector removed it.
    const row = await nextRepair(PROBING, before)
    expect(row).toMatchObject({
      actor: 'system:drift',
      surface: 'scenarios',
      repair: expect.stringMatching(/installed again although disabled in the panel: its link was removed/),
    })
    expect(present(probingLink())).toBe(false)
    const drift = (await api('/api/security/drift')).json
    expect(drift.scenarios.drift_detected).toBe(false)
    expect(drift.scenarios.repaired[0]).toMatchObject({ target: PROBING, detail: row.repair })
    expect(
      (await api('/api/security/scenarios')).json.scenarios.find((s: { canonical_name: string }) => s.canonical_name === PROBING).disabled,
    ).toBe(true)
    const { log } = await restartAndExpectUp()
    expect(log).not.toMatch(/name=crowdsecurity\/http-probing/)
    expect(log).not.toContain(PROBING)
    expect(await installedScenarios()).not.toContain(PROBING)
    loadedWithoutProbing = loadedCount(log)
    expect(loadedWithoutProbing).toBeGreaterThan(20)
  })

  it('re-enabled in the panel, comes back by itself after a hand `cscli scenarios remove`, audited; the restarted engine loads it', async () => {
    const on = await api(`/api/security/scenarios/${encodeURIComponent(PROBING)}`, 'PATCH', { disabled: false })
    expect(on.status).toBe(200)
    expect(readFileSync(listFile(), 'utf8')).not.toContain(PROBING)
    const before = (await repairsOf(PROBING)).length
    await cs.cscli(['scenarios', 'remove', PROBING, '--force'])
    const row = await nextRepair(PROBING, before)
    expect(row.repair).toMatch(/enabled in the panel but its link was missing: the link was restored/)
    expect(lstatSync(probingLink()).isSymbolicLink()).toBe(true)
    const { log } = await restartAndExpectUp()
    expect(log).toMatch(/name=crowdsecurity\/http-probing/)
    // The same log that never named it above names it now, and counts one scenario more.
    expect(log).toContain(`name=${PROBING}`)
    expect(loadedCount(log)).toBe(loadedWithoutProbing + 1)
    expect(await installedScenarios()).toContain(PROBING)
  })
})

describe('the whitelist file', () => {
  it('deleted: rewritten from the database, audited; the engine loads it after a restart', async () => {
    expect((await api('/api/security/whitelist', 'POST', { value: '198.51.100.140' })).status).toBe(201)
    const written = readFileSync(whitelistFile(), 'utf8')
    const before = (await repairsOf(whitelistFile())).length
    rmSync(whitelistFile())
    const row = await nextRepair(whitelistFile(), before)
    expect(row).toMatchObject({ surface: 'whitelist', repair: expect.stringMatching(/was missing: rewritten from the database/) })
    expect(readFileSync(whitelistFile(), 'utf8')).toBe(written)
    expect((await restartAndExpectUp()).log).toMatch(/Loaded 1 parser nodes.*panel-whitelist\.yaml/)
  })

  it('edited into a node the engine refuses (no entry left): the panel rewrites it at its start, and the engine starts again', async () => {
    await panel.stop()
    writeFileSync(
      whitelistFile(),
      'name: panel/whitelist\ndescription: "edited by hand"\nwhitelist:\n  reason: "edited"\n  ip: []\n  cidr: []\n',
    )
    // The engine itself on the edited file: it refuses to load it.
    const refused = await cs.testConfig()
    expect(refused.ok).toBe(false)
    expect(refused.output).toMatch(/Node is empty/)
    const before = (await repairsOf(whitelistFile())).length
    await startThePanel(panel.dataDir)
    const row = await nextRepair(whitelistFile(), before)
    expect(row.repair).toMatch(/differed: rewritten from the database/)
    expect(readFileSync(whitelistFile(), 'utf8')).toContain('ip: ["198.51.100.140"]')
    expect((await restartAndExpectUp()).log).toMatch(/Loaded 1 parser nodes.*panel-whitelist\.yaml/)
  })
})

describe('the true_detect_mode profiles block', () => {
  it('edited into a filter the local API refuses: the panel rewrites it at its start, and the engine starts again', async () => {
    const group = (await api('/api/target-groups', 'POST', { name: 'g', targets: [{ address: '127.0.0.1:9' }] })).json
    const host = await api('/api/hosts', 'POST', {
      domain: 'quiet.example.test',
      target_group_id: group.id,
      tls_mode: 'none',
      true_detect_mode: true,
    })
    expect(host.status).toBe(201)
    const written = readFileSync(profilesFile(), 'utf8')
    expect(written).toContain(`name: panel_true_detect_host_${host.json.id}`)
    await panel.stop()
    writeFileSync(profilesFile(), written.replace('Alert.Remediation == true &&', 'Alert.Remediation == true && && '))
    const refused = await cs.testConfig()
    expect(refused.ok, 'the engine accepted a broken profile filter').toBe(false)
    const before = (await repairsOf(profilesFile())).length
    await startThePanel(panel.dataDir)
    const row = await nextRepair(profilesFile(), before)
    expect(row).toMatchObject({ surface: 'profiles', repair: expect.stringMatching(/block differed: rewritten from the database/) })
    expect(readFileSync(profilesFile(), 'utf8')).toBe(written)
    await restartAndExpectUp()
  })

  it("deleted from profiles.yaml (the engine's own profiles kept): rewritten from the database, audited", async () => {
    const written = readFileSync(profilesFile(), 'utf8')
    const withoutBlock = written.slice(written.indexOf('# END panel-managed profiles\n') + '# END panel-managed profiles\n'.length)
    expect(withoutBlock).toContain('name: default_ip_remediation')
    const before = (await repairsOf(profilesFile())).length
    writeFileSync(profilesFile(), withoutBlock)
    const row = await nextRepair(profilesFile(), before)
    expect(row.repair).toMatch(/block was missing: rewritten from the database/)
    expect(readFileSync(profilesFile(), 'utf8')).toBe(written)
    const drift = (await api('/api/security/drift')).json.profiles
    expect(drift.drift_detected).toBe(false)
    expect(drift.repaired[0]).toMatchObject({ target: profilesFile(), detail: row.repair })
    await restartAndExpectUp()
  })
})

describe('the AppSec threshold file', () => {
  it("deleted: rewritten from the database, audited; after a restart the engine's AppSec judges with the stored threshold", async () => {
    expect((await api('/api/security/appsec-tuning', 'PUT', { inbound_threshold: 3, outbound_threshold: 2 })).status).toBe(200)
    const written = readFileSync(tuningFile(), 'utf8')
    const before = (await repairsOf(tuningFile())).length
    rmSync(tuningFile())
    const row = await nextRepair(tuningFile(), before)
    expect(row).toMatchObject({ surface: 'appsec', repair: expect.stringMatching(/was missing: rewritten from the database/) })
    expect(readFileSync(tuningFile(), 'utf8')).toBe(written)
    await restartAndExpectUp()
    // The engine's own configuration test accepts every file the panel rewrote in this file's cases.
    const test = await cs.testConfig()
    expect(test.ok, test.output).toBe(true)
    // A scanner user agent scores 3 in deploy/crowdsec's rules: blocked only with the file's threshold of 3 (the default is 5).
    const ask = (ua: string) =>
      freshRequest(cs.appsecUrl!, {
        headers: {
          'x-crowdsec-appsec-ip': '198.51.100.9',
          'x-crowdsec-appsec-uri': '/search?q=shoes',
          'x-crowdsec-appsec-host': 'shop.example.test',
          'x-crowdsec-appsec-verb': 'GET',
          'x-crowdsec-appsec-api-key': cs.bouncerKey,
          'x-crowdsec-appsec-user-agent': ua,
        },
      })
    expect((await ask('sqlmap/1.7')).status).toBe(403)
    expect((await ask('curl/8.0')).status).toBe(200)
  })
})

describe('the audit rows', () => {
  it('name the surface and the target, never a secret', async () => {
    const rows = (await panel.db().execute("SELECT raw FROM logs WHERE message = 'engine_drift_repair'")).rows.map((r) => String(r.raw))
    expect(rows.length).toBeGreaterThan(5)
    for (const raw of rows) {
      expect(Object.keys(JSON.parse(raw)).sort()).toEqual(['action', 'actor', 'repair', 'surface', 'target'])
      for (const secret of [cs.machinePassword, cs.bouncerKey]) expect(raw).not.toContain(secret)
    }
  })
})
