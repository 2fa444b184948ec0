import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../support/build'
import { startCapiStandIn, type CapiStandIn } from '../support/capi-standin'
import { LAPI_USER_AGENT, machineToken, panelEnvFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { eventually } from '../support/http'
import { writeMmdb } from '../support/mmdb-writer'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { makeTempDir } from '../support/processes'

// Nothing of the panel's leaves the machine: the real engine, registered to a
// loopback stand-in for the central API, runs its own push loop; the panel's
// country ranges must never arrive there with the console file the deployment
// ships (deploy/crowdsec/console.yaml), while a hub scenario's alert still does
// (so the stand-in is really wired). With the engine's own defaults the same
// country ranges do arrive, which is why the deployment ships the file.

const COUNTRY_DB = writeMmdb([
  ['5.0.0.0/24', { country_code: 'LU' }],
  ['5.0.2.0/23', { country_code: 'LU' }],
])

async function postCertifiedAlert(cs: CrowdsecHandle, ip: string) {
  const now = new Date().toISOString()
  const res = await fetch(`${cs.url}/v1/alerts`, {
    method: 'POST',
    headers: { 'user-agent': LAPI_USER_AGENT, 'content-type': 'application/json', authorization: `Bearer ${await machineToken(cs)}` },
    body: JSON.stringify([
      {
        scenario: 'crowdsecurity/http-probing',
        scenario_hash: 'a1b2c3d4e5f6',
        scenario_version: '0.4',
        message: 'probing',
        events_count: 11,
        start_at: now,
        stop_at: now,
        capacity: 10,
        leakspeed: '10s',
        simulated: false,
        events: [],
        source: { scope: 'Ip', value: ip, ip },
        decisions: [{ origin: 'crowdsec', type: 'ban', scope: 'Ip', value: ip, duration: '4h', scenario: 'crowdsecurity/http-probing' }],
      },
    ]),
  })
  expect(res.status, await res.text()).toBe(201)
}

async function countryBan(panel: PanelHandle, cookie: string) {
  const res = await panel.request('/api/security/countries/lu/expand', {
    method: 'POST',
    cookie,
    body: { duration: '1h', reason: 'sharing test' },
  })
  expect(res.status, res.text).toBe(202)
  const job = await eventually(
    () => panel.request(`/api/security/jobs/${res.json.id}`, { cookie }),
    (r) => ['completed', 'failed'].includes(r.json?.state),
    30_000,
    200,
  )
  expect(job.json.state).toBe('completed')
}

describe.each([
  { name: "the deployment's console file", consoleFile: join(REPO_ROOT, 'deploy/crowdsec/console.yaml'), countryShared: false },
  { name: "the engine's defaults (share_custom: true)", consoleFile: '', countryShared: true },
])('a registered engine with $name', ({ consoleFile, countryShared }) => {
  let capi: CapiStandIn, cs: CrowdsecHandle, panel: PanelHandle
  beforeAll(async () => {
    capi = await startCapiStandIn()
    let file = consoleFile
    if (!file) {
      file = join(makeTempDir('console-'), 'console.yaml')
      // CrowdSec 1.7.8's defaults when console.yaml says nothing (pkg/csconfig/console.go).
      writeFileSync(file, 'share_manual_decisions: false\nshare_custom: true\nshare_tainted: true\nshare_context: false\n')
    }
    cs = await startCrowdsec({ agent: false, onlineApi: { url: capi.url, consoleFile: file } })
    registerTestSecret(cs.machinePassword, cs.bouncerKey)
    const dataDir = makeTempDir('panel-sharing-')
    mkdirSync(join(dataDir, 'geoip'))
    writeFileSync(join(dataDir, 'geoip/country.mmdb'), COUNTRY_DB)
    panel = await startPanel({ dataDir, env: panelEnvFor(cs) })
  })
  afterAll(async () => {
    await panel?.stop()
    await cs?.stop()
    await capi?.stop()
  })

  it(countryShared ? 'sends the country ranges upstream' : "sends a hub scenario upstream and nothing of the panel's", async () => {
    await countryBan(panel, await panel.login())
    await postCertifiedAlert(cs, '198.51.100.250')
    // The engine logs in, then pushes what it shares every 10 s (first push within 17 s).
    const arrived = await eventually(
      async () => capi.signals.map((s) => s.scenario),
      (s) => s.includes('crowdsecurity/http-probing') && (!countryShared || s.some((x) => x.startsWith('panel/'))),
      40_000,
      500,
    )
    expect(capi.paths.some((p) => p.endsWith('/watchers/login'))).toBe(true)
    expect(arrived).toContain('crowdsecurity/http-probing')
    const panelSignals = capi.signals.filter(
      (s) => s.scenario.startsWith('panel/') || (s.decisions ?? []).some((d) => d.origin?.startsWith('panel-')),
    )
    if (countryShared) expect(panelSignals.map((s) => s.scenario)).toContain('panel/country-ban:LU')
    else expect(panelSignals).toEqual([])
  })
})
