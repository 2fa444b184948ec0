import { execFile } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { REPO_ROOT } from '../support/build'
import { crowdsecBinaries, decisionsFor, startCrowdsec, type CrowdsecHandle } from '../support/crowdsec'
import { makeTempDir } from '../support/processes'
import { renderTrueDetectProfiles } from '../../server/utils/security/profiles'

// The engine side of deploy/: the acquisition, the parser for the WAF's JSON
// audit log and the scenario that bans repeated WAF blocks, run by the real
// engine (Debian's CrowdSec) over audit lines shaped as Coraza writes them.

const run = promisify(execFile)
const DEPLOY = join(REPO_ROOT, 'deploy/crowdsec')
let cs: CrowdsecHandle

/** One audit line as Coraza's JSON format writes it (proxy-and-engine.md A2). */
function auditLine(ip: string, interrupted: boolean, n: number, host = 'shop.example.test'): string {
  return JSON.stringify({
    transaction: {
      // Coraza's format, in the proxy's zone (UTC); now, so that the decision is still active when read.
      timestamp: new Date().toISOString().slice(0, 19).replace('T', ' ').replace(/-/g, '/'),
      unix_timestamp: Date.now() * 1e6,
      id: `tx${ip}${n}`,
      client_ip: ip,
      client_port: 0,
      host_ip: '',
      host_port: 0,
      server_id: host,
      request: {
        method: 'GET',
        protocol: 'HTTP/1.1',
        uri: `/search?q=%27+or+1%3D1--${n}`,
        http_version: '',
        headers: { host: [host] },
        body: '',
        files: null,
        args: {},
        length: 0,
      },
      response: { protocol: '', status: interrupted ? 403 : 200, headers: {}, body: '' },
      producer: {
        connector: '',
        version: '',
        server: '',
        rule_engine: interrupted ? 'On' : 'DetectionOnly',
        stopwatch: '',
        rulesets: ['OWASP_CRS/4.25.0'],
      },
      highest_severity: '',
      is_interrupted: interrupted,
    },
    messages: [
      {
        actionset: 'OWASP_CRS/4.25.0',
        message: 'SQL Injection Attack Detected via libinjection',
        error_message: '',
        data: { id: 942100, severity: 2, msg: 'SQL Injection Attack Detected via libinjection', tags: ['attack-sqli'] },
      },
    ],
  })
}

beforeAll(async () => {
  // The harness installs what the compose stack mounts: the hub's syslog-logs
  // (its non-syslog node turns the acquisition's type label into
  // evt.Parsed.program) and dateparse-enrich, and deploy/crowdsec's parser and
  // scenario. No harness whitelist: the replayed addresses must count.
  cs = await startCrowdsec({ harnessWhitelist: [] })
  for (const f of [
    'parsers/s00-raw/syslog-logs.yaml',
    'parsers/s02-enrich/dateparse-enrich.yaml',
    'parsers/s01-parse/panel-coraza-audit.yaml',
    'scenarios/panel-coraza-waf-blocks.yaml',
  ]) {
    expect(existsSync(join(cs.configDir, f)), f).toBe(true)
  }
  expect(readFileSync(join(cs.configDir, 'parsers/s01-parse/panel-coraza-audit.yaml'), 'utf8')).toBe(
    readFileSync(join(DEPLOY, 'parsers/s01-parse/panel-coraza-audit.yaml'), 'utf8'),
  )
})
afterAll(async () => {
  await cs?.stop()
})

describe('the engine reads the WAF audit log (deploy/crowdsec)', () => {
  it('labels the WAF audit log with the type the parser expects', () => {
    const docs = parseYamlDocs(join(DEPLOY, 'acquis.yaml'))
    const waf = docs.find((d) => d.filenames.some((f: string) => f.endsWith('/waf-audit.log')))
    expect(waf.labels.type).toBe('coraza-audit')
  })

  it('loads the parser and the scenario', async () => {
    const r = await cs.testConfig()
    expect(r.ok, r.output).toBe(true)
  })

  it('bans an address after 5 blocked requests, and never for detection-only matches', async () => {
    const lines = [
      ...Array.from({ length: 6 }, (_, i) => auditLine('198.51.100.77', true, i)),
      ...Array.from({ length: 8 }, (_, i) => auditLine('198.51.100.78', false, i)),
    ]
    const r = await replay(lines)
    const banned = await decisionsFor(cs, '198.51.100.77')
    expect(
      banned.map((d) => ({ scenario: d.scenario, type: d.type })),
      r.stdout + r.stderr,
    ).toEqual([{ scenario: 'panel/coraza-waf-blocks', type: 'ban' }])
    expect(await decisionsFor(cs, '198.51.100.78')).toEqual([])
  })

  it("makes no decision for a host in true_detect_mode (the panel's profile), and still does for the others", async () => {
    const profiles = join(cs.configDir, 'profiles.yaml')
    writeFileSync(profiles, renderTrueDetectProfiles([{ id: 7, names: ['quiet.example.test'] }]) + readFileSync(profiles, 'utf8'))
    await cs.restart() // the local API reads profiles at start
    await replay([
      ...Array.from({ length: 6 }, (_, i) => auditLine('198.51.100.80', true, i, 'quiet.example.test')),
      ...Array.from({ length: 6 }, (_, i) => auditLine('198.51.100.81', true, i, 'loud.example.test')),
    ])
    expect(await decisionsFor(cs, '198.51.100.80')).toEqual([])
    expect((await decisionsFor(cs, '198.51.100.81')).map((d) => d.scenario)).toEqual(['panel/coraza-waf-blocks'])
  })
})

/** Replay mode: the agent reads the lines once, posts its alerts to the local API and exits. */
async function replay(lines: string[]): Promise<{ stdout: string; stderr: string }> {
  const dir = makeTempDir('waf-audit-')
  const log = join(dir, 'waf-audit.log')
  writeFileSync(log, `${lines.join('\n')}\n`)
  return run(crowdsecBinaries().crowdsec, ['-c', cs.configFile, '-dsn', `file://${log}`, '-type', 'coraza-audit', '-no-api'], {
    cwd: dir,
    timeout: 60_000,
  }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`${err.message}\n${err.stdout}\n${err.stderr}`)
  })
}

function parseYamlDocs(path: string): any[] {
  return readFileSync(path, 'utf8')
    .split(/^---$/m)
    .map((d: string) => parseYaml(d))
}
