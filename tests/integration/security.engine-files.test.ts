import { existsSync, lstatSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decisionsFor, panelEnvFor, postDecisions, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'

let cs: CrowdsecHandle
let panel: PanelHandle
let admin: string
const env = () => ({ ...panelEnvFor(cs), PANEL_DRIFT_INTERVAL_SECONDS: '1' })
const api = (path: string, method = 'GET', body?: unknown) => panel.request(path, { method, cookie: admin, body })
const whitelistFile = () => join(cs.configDir, 'parsers/s02-enrich/panel-whitelist.yaml')
const probing = () => join(cs.configDir, 'scenarios/http-probing.yaml')
/** Whether anything (a link, even a dangling one, or a file) is at the path. */
const present = (path: string) => lstatSync(path, { throwIfNoEntry: false }) !== undefined
type Repair = { at: string; target: string; detail: string }
const repairs = async (target: string) =>
  (
    await panel.db().execute({ sql: "SELECT actor, raw FROM logs WHERE source = 'audit' AND message = 'engine_drift_repair'", args: [] })
  ).rows
    .map((r) => ({ actor: String(r.actor), ...JSON.parse(String(r.raw)) }))
    .filter((r) => r.target === target)

beforeAll(async () => {
  cs = await startCrowdsec()
  registerTestSecret(cs.machinePassword, cs.bouncerKey)
  await cs.cscli(['scenarios', 'install', 'crowdsecurity/http-probing'])
  await cs.cscli(['scenarios', 'install', 'crowdsecurity/http-crawl-non_statics'])
  panel = await startPanel({ env: env() })
  admin = await panel.login()
})
afterAll(async () => {
  await panel?.stop()
  await cs?.stop()
})

describe('whitelist', () => {
  it('adds entries, removes the decisions they cover, and writes a parser file the engine loads', async () => {
    await postDecisions(cs, [
      { value: '198.51.100.40' },
      { value: '198.51.100.64/27' },
      { value: '198.51.100.0/24', origin: 'test-origin' },
    ])
    const ip = await api('/api/security/whitelist', 'POST', { value: '198.51.100.40', reason: 'office' })
    expect(ip.status).toBe(201)
    expect(ip.json).toMatchObject({ value: '198.51.100.40', reason: 'office', created_by: 'admin@example.test', removed_decision_count: 1 })
    const cidr = await api('/api/security/whitelist', 'POST', { value: '198.51.100.64/26' })
    expect(cidr.json.removed_decision_count).toBe(1)
    // Only the wider /24 is left for both addresses: it contains the entries, they do not cover it.
    expect((await decisionsFor(cs, '198.51.100.40')).map((d) => d.value)).toEqual(['198.51.100.0/24'])
    expect((await decisionsFor(cs, '198.51.100.70')).map((d) => d.value)).toEqual(['198.51.100.0/24'])

    expect((await api('/api/security/whitelist')).json.entries.map((e: any) => e.value)).toEqual(['198.51.100.40', '198.51.100.64/26'])
    const file = readFileSync(whitelistFile(), 'utf8')
    expect(file).toContain('ip: ["198.51.100.40"]')
    expect(file).toContain('cidr: ["198.51.100.64/26"]')
    const loaded = await cs.testConfig()
    expect(loaded.ok).toBe(true)
    expect(loaded.output).toMatch(/Loaded 1 parser nodes.*panel-whitelist\.yaml/)

    expect((await api('/api/security/whitelist/198.51.100.64%2F26', 'DELETE')).status).toBe(204)
    expect(readFileSync(whitelistFile(), 'utf8')).toContain('cidr: []')
  })

  it.each([
    [{ value: 'nope' }, 400, /value: must be an IP address or a CIDR/],
    [{ value: '10.0.0.0/33' }, 400, /prefix length/],
    [{ value: '198.51.100.40' }, 409, /already whitelisted/],
    [{ value: '10.0.0.1', note: 'x' }, 400, /unknown field "note"/],
  ])('refuses %j', async (body, status, message) => {
    const before = readFileSync(whitelistFile(), 'utf8')
    const res = await api('/api/security/whitelist', 'POST', body)
    expect(res.status).toBe(status)
    expect(res.json.error).toMatch(message)
    expect(readFileSync(whitelistFile(), 'utf8')).toBe(before)
  })

  it('removing an entry that does not exist is 404', async () => {
    expect((await api('/api/security/whitelist/10.1.2.3', 'DELETE')).status).toBe(404)
  })
})

describe('scenarios and drift', () => {
  it('lists installed scenarios with hub descriptions', async () => {
    const res = await api('/api/security/scenarios')
    expect(res.json).toMatchObject({
      is_available: true,
      mount_path: join(cs.configDir, 'scenarios'),
      disabled_count: 0,
      drift_detected: false,
    })
    const p = res.json.scenarios.find((s: any) => s.canonical_name === 'crowdsecurity/http-probing')
    expect(p).toMatchObject({
      short_name: 'http-probing',
      source: 'hub',
      path: probing(),
      disabled: false,
      description: expect.stringMatching(/probing/i),
    })
    expect(Date.parse(res.json.last_modified_at)).toBeGreaterThan(0)
  })

  it('disables by a %2F name (the symlink goes); the detector removes a hand reinstall again, audited, and leaves a local file flagged', async () => {
    const off = await api('/api/security/scenarios/crowdsecurity%2Fhttp-probing', 'PATCH', { disabled: true })
    expect(off.status).toBe(200)
    expect(off.json).toMatchObject({ canonical_name: 'crowdsecurity/http-probing', disabled: true })
    expect(present(probing())).toBe(false)
    expect((await api('/api/security/scenarios')).json.disabled_count).toBe(1)
    expect(readFileSync(join(cs.configDir, 'panel-disabled-scenarios.txt'), 'utf8')).toMatch(/^crowdsecurity\/http-probing$/m)
    const loaded = await cs.testConfig()
    expect(loaded.output).not.toMatch(/name=crowdsecurity\/http-probing/)

    // Someone reinstalls it by hand: the detector removes the link again within a tick or two.
    symlinkSync(join(cs.hubDir, 'scenarios/crowdsecurity/http-probing.yaml'), probing())
    const repaired = await eventually(
      () => api('/api/security/drift'),
      (r) => r.json.scenarios.repaired.some((x: Repair) => x.target === 'crowdsecurity/http-probing'),
      15_000,
      250,
    )
    expect(present(probing())).toBe(false)
    expect(repaired.json.scenarios.drift_detected).toBe(false)
    expect(repaired.json.scenarios.repaired[0].detail).toMatch(/installed again although disabled in the panel: its link was removed/)
    const audit = await repairs('crowdsecurity/http-probing')
    expect(audit).toHaveLength(1)
    expect(audit[0]).toMatchObject({ actor: 'system:drift', action: 'engine_drift_repair', surface: 'scenarios' })

    // A plain file of that name is the operator's (a local scenario): never deleted, flagged until the operator acts.
    writeFileSync(probing(), 'name: someone/own-probing\n')
    const flagged = await eventually(
      () => api('/api/security/drift'),
      (r) => r.json.scenarios.drift_detected,
      15_000,
      250,
    )
    expect(flagged.json.scenarios.details.join()).toMatch(/http-probing is disabled in the panel, but .* is a local file/)
    expect((await api('/api/security/scenarios')).json.drift_detected).toBe(true)
    expect(readFileSync(probing(), 'utf8')).toContain('someone/own-probing')
    rmSync(probing())
    await eventually(
      () => api('/api/security/drift'),
      (r) => !r.json.scenarios.drift_detected,
      15_000,
      250,
    )

    const on = await api('/api/security/scenarios/crowdsecurity%2Fhttp-probing', 'PATCH', { disabled: false })
    expect(on.json.disabled).toBe(false)
    expect(existsSync(probing())).toBe(true)
    expect(readFileSync(join(cs.configDir, 'panel-disabled-scenarios.txt'), 'utf8')).not.toContain('http-probing')
    expect((await cs.testConfig()).output).toMatch(/name=crowdsecurity\/http-probing/)
  })

  it('restores the link of a scenario re-enabled in the panel when it goes missing, audited', async () => {
    unlinkSync(probing())
    await eventually(
      async () => existsSync(probing()),
      (x) => x,
      15_000,
      100,
    )
    expect(lstatSync(probing()).isSymbolicLink()).toBe(true)
    // The audit row is written after the link (under load the test can read between the two).
    const audit = await eventually(
      () => repairs('crowdsecurity/http-probing'),
      (rows) => /link was restored/.test(String(rows.at(-1)?.repair)),
      15_000,
      100,
    )
    expect(audit.at(-1)!.repair).toMatch(/enabled in the panel but its link was missing: the link was restored/)
    expect((await api('/api/security/drift')).json.scenarios.drift_detected).toBe(false)
  })

  it.each([
    ['crowdsecurity%2Fno-such-scenario', { disabled: true }, 404],
    ['..%2F..%2Fetc', { disabled: true }, 400],
    ['%2Fetc%2Fpasswd', { disabled: true }, 400],
    ['crowdsecurity%2Fhttp-probing', { disabled: 'yes' }, 400],
  ])('PATCH %s %j -> %i, nothing outside the folder touched', async (name, body, status) => {
    const res = await api(`/api/security/scenarios/${name}`, 'PATCH', body)
    expect(res.status).toBe(status)
    expect(typeof res.json.error).toBe('string')
    expect(existsSync(probing())).toBe(true)
  })
})

describe('appsec tuning', () => {
  const plugin = () => join(cs.dataDir, 'crs-plugins/panel/panel-config.conf')
  it('stores and writes the thresholds; the detector rewrites a hand edit, audited', async () => {
    const res = await api('/api/security/appsec-tuning', 'PUT', { inbound_threshold: 10, outbound_threshold: 8 })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({ inbound_threshold: 10, outbound_threshold: 8, drift_detected: false })
    expect(readFileSync(plugin(), 'utf8')).toContain(
      'setvar:tx.inbound_anomaly_score_threshold=10,setvar:tx.outbound_anomaly_score_threshold=8',
    )
    const before = (await repairs(plugin())).length
    writeFileSync(plugin(), 'SecAction "id:9990110,phase:1,pass,nolog,setvar:tx.inbound_anomaly_score_threshold=999"\n')
    // The detector rewrites the file, then writes its audit row: wait for the row (the last of the two),
    // not the file, or a loaded machine reads the audit between them.
    const audit = await eventually(
      () => repairs(plugin()),
      (rows) => rows.length > before,
      15_000,
      100,
    )
    expect(readFileSync(plugin(), 'utf8')).toContain('inbound_anomaly_score_threshold=10,')
    expect(audit.length).toBe(before + 1)
    expect(audit.at(-1)).toMatchObject({
      actor: 'system:drift',
      surface: 'appsec',
      repair: expect.stringMatching(/differed from the stored thresholds: rewritten from the database/),
    })
    expect((await api('/api/security/appsec-tuning')).json.drift_detected).toBe(false)
    expect((await api('/api/settings')).json['appsec.inbound_threshold']).toBe(10)
  })
  it.each([
    [{ inbound_threshold: 0, outbound_threshold: 4 }],
    [{ inbound_threshold: 5 }],
    [{ inbound_threshold: 5.5, outbound_threshold: 4 }],
  ])('refuses %j', async (body) => {
    const res = await api('/api/security/appsec-tuning', 'PUT', body)
    expect(res.status).toBe(400)
    expect(readFileSync(plugin(), 'utf8')).toContain('inbound_anomaly_score_threshold=10')
  })
})

describe('true_detect_mode profiles', () => {
  it('writes a profile before the defaults that the engine compiles, and removes it with the flag', async () => {
    const group = (await api('/api/target-groups', 'POST', { name: 'g', targets: [{ address: '127.0.0.1:9' }] })).json
    const host = await api('/api/hosts', 'POST', {
      domain: 'shop.example.test',
      aliases: ['www.shop.example.test'],
      target_group_id: group.id,
      tls_mode: 'none',
      true_detect_mode: true,
    })
    expect(host.status).toBe(201)
    const profiles = readFileSync(join(cs.configDir, 'profiles.yaml'), 'utf8')
    expect(profiles.startsWith('# BEGIN panel-managed')).toBe(true)
    expect(profiles.indexOf(`panel_true_detect_host_${host.json.id}`)).toBeLessThan(profiles.indexOf('default_ip_remediation'))
    expect(profiles).toContain('GetMeta(\\"target_host\\") == \\"shop.example.test\\"')
    expect(profiles).toContain('GetMeta(\\"target_fqdn\\") == \\"www.shop.example.test\\"')
    await cs.restart() // the LAPI compiles profiles at start and refuses to start on an error
    expect((await fetch(`${cs.url}/health`)).status).toBe(200)

    await api(`/api/hosts/${host.json.id}`, 'PUT', {
      domain: 'shop.example.test',
      target_group_id: group.id,
      tls_mode: 'none',
      true_detect_mode: false,
    })
    const after = readFileSync(join(cs.configDir, 'profiles.yaml'), 'utf8')
    expect(after).not.toContain('panel-managed')
    expect(after).toContain('default_ip_remediation')
  })
})

describe('check-self and overview', () => {
  it('tells the caller whether its own address is banned or whitelisted', async () => {
    expect((await api('/api/security/check-self')).json).toMatchObject({ ip: '127.0.0.1', banned: false, whitelisted: false })
    await postDecisions(cs, [{ value: '127.0.0.1', scenario: 'test/self' }])
    const banned = (await api('/api/security/check-self')).json
    expect(banned.banned).toBe(true)
    expect(banned.decisions[0]).toMatchObject({ value: '127.0.0.1', scenario: 'test/self' })
    await api('/api/security/whitelist', 'POST', { value: '127.0.0.0/8' })
    expect((await api('/api/security/check-self')).json).toMatchObject({ banned: false, whitelisted: true })
  })

  it('counts protections per host and names the proxy modules the panel does without', async () => {
    const o = (await api('/api/security/overview')).json
    expect(o).toMatchObject({
      hosts_total: 1,
      waf: { enabled: 0, modes: { detection: 0, blocking: 0 } },
      rate_limit_enabled: 0,
      forward_auth_enabled: 0,
      lan_only: 0,
    })
    expect(o.certificates).toEqual({ total: 0, valid: 0, expiring_soon: 0, expired: 0, manual: 0, acme: 0 })
    expect(o.proxy_modules_missing).toEqual(['crowdsec', 'waf', 'ratelimit', 'dns', 'geo', 'wafshare', 'storage'])
  })
})

describe('boot re-derives the engine files from the database', () => {
  it('rewrites a deleted whitelist file at the next start', async () => {
    rmSync(whitelistFile())
    await panel.stop()
    panel = await startPanel({ env: env(), dataDir: panel.dataDir })
    admin = await panel.login()
    await eventually(
      async () => existsSync(whitelistFile()),
      (x) => x,
      15_000,
      100,
    )
    expect(readFileSync(whitelistFile(), 'utf8')).toContain('"198.51.100.40"')
  })
})
