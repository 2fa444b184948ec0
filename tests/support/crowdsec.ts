import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './ports'
import { requireBinary, startProcess, waitFor, type ManagedProcess, makeTempDir } from './processes'

const run = promisify(execFile)

/** The CrowdSec local API alone (-no-cs), isolated config, with a machine and a bouncer key. */
export async function startCrowdsec() {
  requireBinary('/usr/bin/crowdsec', 'crowdsec')
  requireBinary('/usr/bin/cscli', 'cscli')
  const root = makeTempDir('crowdsec-')
  const etc = join(root, 'etc'), data = join(root, 'data'), hub = join(root, 'hub')
  mkdirSync(etc, { recursive: true }); mkdirSync(data, { recursive: true })
  cpSync('/usr/share/crowdsec/hub', hub, { recursive: true })
  for (const f of readdirSync('/usr/share/crowdsec/data')) cpSync(join('/usr/share/crowdsec/data', f), join(data, f), { recursive: true })
  cpSync('/etc/crowdsec/patterns', join(etc, 'patterns'), { recursive: true })
  for (const f of ['profiles.yaml', 'simulation.yaml']) cpSync(join('/etc/crowdsec', f), join(etc, f))
  writeFileSync(join(etc, 'local_api_credentials.yaml'), '')
  writeFileSync(join(etc, 'acquis.yaml'), '')
  const [port, promPort] = await Promise.all([freePort(), freePort()])
  const configFile = join(etc, 'config.yaml')
  writeFileSync(configFile, `common: {daemonize: true, log_media: stdout, log_level: info, working_dir: .}
config_paths:
  config_dir: ${etc}/
  data_dir: ${data}/
  simulation_path: ${etc}/simulation.yaml
  hub_dir: ${hub}/
  index_path: ${hub}/.index.json
  notification_dir: ${etc}/notifications/
  plugin_dir: /usr/lib/crowdsec/plugins/
crowdsec_service: {acquisition_path: ${etc}/acquis.yaml, parser_routines: 1}
cscli: {output: human, color: "no", hub_branch: master}
db_config: {log_level: info, type: sqlite, db_path: ${data}/crowdsec.db, use_wal: true, flush: {max_items: 5000, max_age: 7d}}
plugin_config: {user: nobody, group: nogroup}
api:
  client: {insecure_skip_verify: false, credentials_path: ${etc}/local_api_credentials.yaml}
  server:
    log_level: info
    listen_uri: 127.0.0.1:${port}
    profiles_path: ${etc}/profiles.yaml
    trusted_ips: [127.0.0.1, "::1"]
prometheus: {enabled: false, level: full, listen_addr: 127.0.0.1, listen_port: ${promPort}}
`)
  const url = `http://127.0.0.1:${port}`
  const logFile = join(root, 'lapi.log')
  // A fixed JWT secret keeps machine tokens valid across restarts.
  const secret = randomBytes(48).toString('hex')
  let proc: ManagedProcess
  const start = async () => {
    proc = startProcess('/usr/bin/crowdsec', ['-c', configFile, '-no-cs'], { logFile, env: { CS_LAPI_SECRET: secret } })
    await waitFor(async () => (await (await fetch(`${url}/health`)).text()).includes('"up"'), { timeoutMs: 20_000, what: 'crowdsec LAPI', logFile })
  }
  await start()
  const cscli = async (args: string[]) => (await run('/usr/bin/cscli', ['-c', configFile, '--error', ...args])).stdout
  const machineId = 'panel'
  const machinePassword = randomBytes(16).toString('hex')
  const bouncerKey = randomBytes(16).toString('hex')
  await cscli(['machines', 'add', machineId, '--password', machinePassword, '-f', join(etc, 'panel_credentials.yaml')])
  await cscli(['bouncers', 'add', 'panel-bouncer', '-k', bouncerKey])
  // The agent side (crowdsec -t, or a run without -no-cs) logs in with its own machine.
  await cscli(['machines', 'add', 'agent', '--password', randomBytes(16).toString('hex'), '-f', join(etc, 'local_api_credentials.yaml'), '--force'])
  writeFileSync(join(etc, 'acquis.yaml'), `filenames: [${join(root, 'access.log')}]\nlabels: {type: caddy}\n`)
  writeFileSync(join(root, 'access.log'), '')
  /** `crowdsec -t`: loads the whole configuration (parsers, scenarios, profiles) and exits. */
  const testConfig = async () => {
    try { const r = await run('/usr/bin/crowdsec', ['-c', configFile, '-t']); return { ok: true, output: r.stdout + r.stderr } }
    catch (err) { const e = err as { stdout?: string; stderr?: string }; return { ok: false, output: (e.stdout ?? '') + (e.stderr ?? '') } }
  }
  return {
    url, machineId, machinePassword, bouncerKey, configDir: etc, dataDir: data, hubDir: hub, logFile, cscli, testConfig,
    get pid() { return proc.pid },
    stop: () => proc.stop(),
    async restart() { await proc.stop(); await start() },
  }
}

export type CrowdsecHandle = Awaited<ReturnType<typeof startCrowdsec>>
export interface TestDecision { value: string; scope?: 'Ip' | 'Range'; origin?: string; scenario?: string; duration?: string; type?: string }

/** Posts one alert carrying these decisions, as the machine (like cscli decisions add does). */
export async function postDecisions(cs: CrowdsecHandle, decisions: TestDecision[]): Promise<void> {
  const headers = { 'user-agent': 'panel-test/1.0', 'content-type': 'application/json' }
  const login = await fetch(`${cs.url}/v1/watchers/login`, { method: 'POST', headers, body: JSON.stringify({ machine_id: cs.machineId, password: cs.machinePassword }) })
  const { token } = await login.json() as { token: string }
  const now = new Date().toISOString()
  const alert = [{
    scenario: 'panel-test/manual', scenario_hash: '', scenario_version: '', message: 'test decisions', events_count: 1,
    start_at: now, stop_at: now, capacity: 0, leakspeed: '0', simulated: false, events: [], source: { scope: '', value: '' },
    decisions: decisions.map((d) => ({
      origin: d.origin ?? 'cscli', type: d.type ?? 'ban', scope: d.scope ?? (d.value.includes('/') ? 'Range' : 'Ip'), value: d.value,
      duration: d.duration ?? '4h', scenario: d.scenario ?? 'panel-test/manual',
    })),
  }]
  const res = await fetch(`${cs.url}/v1/alerts`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}` }, body: JSON.stringify(alert) })
  if (res.status !== 201) throw new Error(`posting decisions failed: ${res.status} ${await res.text()}`)
}

/** What the bouncer sees for an address (decision values and origins). */
export async function decisionsFor(cs: CrowdsecHandle, ip: string): Promise<Array<{ id: number; value: string; origin: string; scope: string }>> {
  const res = await fetch(`${cs.url}/v1/decisions?ip=${encodeURIComponent(ip)}`, { headers: { 'user-agent': 'panel-test/1.0', 'x-api-key': cs.bouncerKey } })
  return (await res.json()) ?? []
}

/** The environment a panel needs to drive this engine. */
export function panelEnvFor(cs: CrowdsecHandle): Record<string, string> {
  return { LAPI_URL: cs.url, LAPI_MACHINE_ID: cs.machineId, LAPI_MACHINE_PASSWORD: cs.machinePassword, LAPI_BOUNCER_KEY: cs.bouncerKey, CROWDSEC_CONFIG_DIR: cs.configDir, CROWDSEC_HUB_DIR: cs.hubDir, CROWDSEC_DATA_DIR: cs.dataDir }
}
