import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freshRequest } from './admin-http'
import { REPO_ROOT } from './build'
import { edgeBinaries } from './edge-bins'
import { freePorts } from './ports'
import { makeTempDir, requireBinary, startProcess, waitFor, type ManagedProcess } from './processes'

const run = promisify(execFile)

/** The engine's binaries: CrowdSec built from its module source by scripts/build-edge.sh. */
export const crowdsecBinaries = () => ({ crowdsec: edgeBinaries().crowdsec, cscli: edgeBinaries().cscli })
/**
 * Sources the harness keeps the engine's own scenarios from acting on (a parser
 * whitelist of its own): public-client addresses 198.51.100.1-127. A test about
 * the engine's own decisions uses an address of 198.51.100.128/25. Loopback is
 * already whitelisted by the hub's crowdsecurity/whitelists.
 */
export const HARNESS_WHITELIST = ['198.51.100.0/25']
/** The offline hub and data of Debian's package (the engine binary is ours; the hub cannot be downloaded here). */
const DEBIAN_HUB = '/usr/share/crowdsec/hub',
  DEBIAN_DATA = '/usr/share/crowdsec/data',
  DEBIAN_ETC = '/etc/crowdsec'
const DEPLOY_CROWDSEC = join(REPO_ROOT, 'deploy/crowdsec')
/** The LAPI refuses a User-Agent that is not shaped name/version (Node's fetch sends `node`). */
export const LAPI_USER_AGENT = 'panel-test/1.0'

export interface CrowdsecHandle {
  /** 'http://127.0.0.1:<port>' */
  url: string
  machineId: string
  machinePassword: string
  /** The credentials file cscli wrote for the machine (url, login, password). */
  machineCredentialsFile: string
  bouncerKey: string
  /** The isolated config folder ($CS/etc). */
  configDir: string
  configFile: string
  dataDir: string
  hubDir: string
  /** Whether the agent runs (acquisition, parsers, scenarios) beside the local API. */
  agent: boolean
  /** The proxy's log folder the agent reads. */
  logDir: string
  /** `<logDir>/access.log`, read with labels type: caddy. */
  accessLogFile: string
  /** `<logDir>/waf-audit.log`, read with labels type: coraza-audit (deploy/crowdsec's parser). */
  wafAuditLogFile: string
  /** With `appsec: true`: the AppSec listener, 'http://127.0.0.1:<port>' (the bouncer's appsec_url). */
  appsecUrl?: string
  logFile: string
  readonly pid: number
  /** Milliseconds the last start took until /health answered up. */
  readonly startMs: number
  stop(): Promise<void>
  /** Stop then start again (same data, same JWT secret: machine tokens stay valid). */
  restart(): Promise<void>
  /** SIGHUP (reload; the LAPI is briefly down), then waits until it is up again. */
  reload(): Promise<void>
  /** `cscli -c <config> --error ...args`; resolves with stdout, rejects with stderr in the message. */
  cscli(args: string[]): Promise<string>
  /** `crowdsec -c <config> -t`: loads the whole configuration (parsers, scenarios, profiles) and exits. */
  testConfig(): Promise<{ ok: boolean; output: string }>
}

export interface CrowdsecOptions {
  /** false: the local API alone (`-no-cs`). Default: the whole engine, agent and local API. */
  agent?: boolean
  /** The proxy's log folder (PROXY_LOG_DIR of the panel driving the proxy). Default: a folder of its own. */
  logDir?: string
  /** Sources the engine's scenarios never act on; default HARNESS_WHITELIST. */
  harnessWhitelist?: string[]
  /** Registers the engine to a central API (a loopback stand-in) with this console (sharing) file. */
  onlineApi?: { url: string; consoleFile: string }
  /**
   * The AppSec component with deploy/crowdsec's configuration and rules (as the
   * compose stack mounts them), listening on a free loopback port (`appsecUrl`).
   * Needs the agent.
   */
  appsec?: boolean
}

/** The harness's own parser whitelist (never the panel's file). */
function _harnessWhitelistYaml(entries: string[]): string {
  const ips = entries.filter((e) => !e.includes('/')),
    cidrs = entries.filter((e) => e.includes('/'))
  return [
    'name: panel-test/harness-whitelist',
    'description: "test clients the engine must not ban by itself"',
    'whitelist:',
    '  reason: "test harness client"',
    ...(ips.length ? [`  ip: ${JSON.stringify(ips)}`] : []),
    ...(cidrs.length ? [`  cidr: ${JSON.stringify(cidrs)}`] : []),
    '',
  ].join('\n')
}

/**
 * CrowdSec (the version scripts/build-edge.sh pins) with an isolated configuration
 * on a free loopback port: by default the whole engine, its agent reading the
 * proxy's access log (hub collection crowdsecurity/caddy) and WAF audit log
 * (deploy/crowdsec's parser and scenario), beside the local API. A machine
 * `panel` (random password) and a bouncer `panel-bouncer` (random key).
 * CS_LAPI_SECRET is fixed per handle, so JWTs survive restarts.
 */
export async function startCrowdsec(opts: CrowdsecOptions = {}): Promise<CrowdsecHandle> {
  const { crowdsec: CROWDSEC_BIN, cscli: CSCLI_BIN } = crowdsecBinaries()
  requireBinary(CROWDSEC_BIN, 'crowdsec (built by scripts/build-edge.sh)')
  requireBinary(CSCLI_BIN, 'cscli (built by scripts/build-edge.sh)')
  requireBinary(DEBIAN_HUB, "the offline hub of Debian's crowdsec package")
  const agent = opts.agent ?? true
  if (opts.appsec && !agent) throw new Error('startCrowdsec: AppSec is a datasource of the agent; appsec: true needs agent: true')
  const root = makeTempDir('crowdsec-')
  const etc = join(root, 'etc'),
    data = join(root, 'data'),
    hub = join(root, 'hub')
  mkdirSync(etc, { recursive: true })
  mkdirSync(data, { recursive: true })
  cpSync(DEBIAN_HUB, hub, { recursive: true })
  for (const f of readdirSync(DEBIAN_DATA)) cpSync(join(DEBIAN_DATA, f), join(data, f), { recursive: true })
  cpSync(join(DEBIAN_ETC, 'patterns'), join(etc, 'patterns'), { recursive: true })
  for (const f of ['profiles.yaml', 'simulation.yaml']) cpSync(join(DEBIAN_ETC, f), join(etc, f))
  mkdirSync(join(etc, 'notifications'), { recursive: true })
  writeFileSync(join(etc, 'local_api_credentials.yaml'), '')
  const logDir = opts.logDir ?? join(root, 'proxy-logs')
  mkdirSync(logDir, { recursive: true })
  const accessLogFile = join(logDir, 'access.log'),
    wafAuditLogFile = join(logDir, 'waf-audit.log')
  // The files exist before the agent starts (Caddy appends to them).
  for (const f of [accessLogFile, wafAuditLogFile]) if (!existsSync(f)) writeFileSync(f, '')
  const [port, promPort, appsecPort] = await freePorts(3)
  const appsecUrl = opts.appsec ? `http://127.0.0.1:${appsecPort}` : undefined
  // deploy/crowdsec/acquis.yaml's AppSec source, on loopback (compose listens on the control network).
  const appsecSource = appsecUrl
    ? `---\nsource: appsec\nlisten_addr: 127.0.0.1:${appsecPort}\nappsec_config: panel/appsec\nlabels: {type: appsec}\n`
    : ''
  writeFileSync(
    join(etc, 'acquis.yaml'),
    `filenames: [${accessLogFile}]\nlabels: {type: caddy}\n---\nfilenames: [${wafAuditLogFile}]\nlabels: {type: coraza-audit}\n${appsecSource}`,
  )
  const configFile = join(etc, 'config.yaml')
  writeFileSync(
    configFile,
    `common: {daemonize: true, log_media: stdout, log_level: info, working_dir: .}
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
    trusted_ips: [127.0.0.1, "::1"]${
      opts.onlineApi
        ? `
    console_path: ${etc}/console.yaml
    online_client: {credentials_path: ${etc}/online_api_credentials.yaml}`
        : ''
    }
prometheus: {enabled: false, level: full, listen_addr: 127.0.0.1, listen_port: ${promPort}}
`,
  )
  if (opts.onlineApi) {
    copyFileSync(opts.onlineApi.consoleFile, join(etc, 'console.yaml'))
    writeFileSync(
      join(etc, 'online_api_credentials.yaml'),
      `url: ${opts.onlineApi.url}\nlogin: panel-test-engine\npassword: ${randomBytes(16).toString('hex')}\n`,
    )
  }
  const url = `http://127.0.0.1:${port}`
  const logFile = join(root, 'lapi.log')
  // A fixed JWT secret (64+ chars) keeps machine tokens valid across restarts.
  const secret = randomBytes(48).toString('hex')
  let proc: ManagedProcess | undefined
  let startMs = 0
  const healthy = async () => {
    const r = await freshRequest(`${url}/health`, { timeoutMs: 2_000, headers: { 'user-agent': LAPI_USER_AGENT } })
    return r.status === 200 && r.body.includes('"up"')
  }
  const start = async (withAgent = agent) => {
    const t0 = performance.now()
    // Started directly (no shell, no `cd … &&`): the PID is crowdsec's own.
    const logStart = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : 0
    proc = startProcess(CROWDSEC_BIN, ['-c', configFile, ...(withAgent ? [] : ['-no-cs'])], {
      cwd: root,
      logFile,
      env: { CS_LAPI_SECRET: secret },
    })
    try {
      await waitFor(healthy, { timeoutMs: 60_000, what: `crowdsec LAPI (${url})`, process: proc })
      // The agent has loaded its parsers and scenarios and follows its files.
      if (withAgent)
        await waitFor(async () => readFileSync(logFile, 'utf8').slice(logStart).includes(AGENT_READY_LINE), {
          timeoutMs: 90_000,
          what: 'crowdsec agent',
          process: proc,
        })
      // AppSec listens a moment after the agent's ready line; any HTTP answer (401 without a key) means up.
      if (withAgent && appsecUrl)
        await waitFor(async () => (await freshRequest(appsecUrl, { timeoutMs: 2_000 })).status > 0, {
          timeoutMs: 60_000,
          what: `crowdsec AppSec (${appsecUrl})`,
          process: proc,
        })
    } catch (err) {
      await proc.stop()
      throw err
    }
    startMs = Math.round(performance.now() - t0)
  }
  const cscli = async (args: string[]) => {
    try {
      return (await run(CSCLI_BIN, ['-c', configFile, '--error', ...args], { maxBuffer: 64 * 1024 * 1024 })).stdout
    } catch (err) {
      const e = err as { stderr?: string; message: string }
      throw new Error(`cscli ${args.join(' ')} failed: ${e.stderr || e.message}`)
    }
  }
  // The agent side: the hub's caddy collection, the project's WAF audit parser and
  // scenario (deploy/crowdsec, as the compose stack mounts them), the harness whitelist.
  if (agent) {
    await cscli(['collections', 'install', 'crowdsecurity/caddy'])
    await cscli(['parsers', 'install', 'crowdsecurity/syslog-logs', 'crowdsecurity/dateparse-enrich', 'crowdsecurity/whitelists'])
    for (const [from, to] of [
      ['parsers/s01-parse/panel-coraza-audit.yaml', 'parsers/s01-parse'],
      ['parsers/s02-enrich/00-panel-client-ip.yaml', 'parsers/s02-enrich'],
      ['scenarios/panel-coraza-waf-blocks.yaml', 'scenarios'],
    ] as const) {
      mkdirSync(join(etc, to), { recursive: true })
      copyFileSync(join(DEPLOY_CROWDSEC, from), join(etc, to, from.split('/').pop()!))
    }
    if (appsecUrl)
      for (const kind of ['appsec-configs', 'appsec-rules']) cpSync(join(DEPLOY_CROWDSEC, kind), join(etc, kind), { recursive: true })
    const harness = opts.harnessWhitelist ?? HARNESS_WHITELIST
    if (harness.length) writeFileSync(join(etc, 'parsers/s02-enrich/harness-whitelist.yaml'), _harnessWhitelistYaml(harness))
  }
  // The local API alone first: the agent cannot log in before its machine exists.
  await start(false)
  const machineId = 'panel'
  const machinePassword = randomBytes(16).toString('hex')
  const machineCredentialsFile = join(etc, 'panel_credentials.yaml')
  const bouncerKey = randomBytes(16).toString('hex')
  try {
    await cscli(['machines', 'add', machineId, '--password', machinePassword, '-f', machineCredentialsFile])
    await cscli(['bouncers', 'add', 'panel-bouncer', '-k', bouncerKey])
    // The agent side (crowdsec -t, or a run without -no-cs) logs in with its own machine.
    await cscli([
      'machines',
      'add',
      'agent',
      '--password',
      randomBytes(16).toString('hex'),
      '-f',
      join(etc, 'local_api_credentials.yaml'),
      '--force',
    ])
    // The agent could not log in before its machine existed: start it again, now as the whole engine.
    if (agent) {
      await proc?.stop()
      await start(true)
    }
  } catch (err) {
    await proc?.stop()
    throw err
  }
  return {
    url,
    machineId,
    machinePassword,
    machineCredentialsFile,
    bouncerKey,
    agent,
    logDir,
    appsecUrl,
    configDir: etc,
    configFile,
    dataDir: data,
    hubDir: hub,
    accessLogFile,
    wafAuditLogFile,
    logFile,
    cscli,
    get pid() {
      return proc!.pid
    },
    get startMs() {
      return startMs
    },
    async stop() {
      await proc?.stop()
    },
    async restart() {
      await proc?.stop()
      await start()
    },
    async reload() {
      const from = readFileSync(logFile, 'utf8').length
      proc!.signal('SIGHUP')
      // /health answers from the old state until the reload takes it down: wait for the line the
      // engine logs once the reload is done (cmd/crowdsec/serve.go), then for /health.
      await waitFor(async () => readFileSync(logFile, 'utf8').slice(from).includes('Reload is finished'), {
        timeoutMs: 60_000,
        what: 'crowdsec reload after SIGHUP',
        process: proc,
      })
      await waitFor(healthy, { timeoutMs: 60_000, what: 'crowdsec LAPI after SIGHUP', process: proc })
    },
    async testConfig() {
      try {
        const r = await run(CROWDSEC_BIN, ['-c', configFile, '-t'])
        return { ok: true, output: r.stdout + r.stderr }
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string }
        return { ok: false, output: (e.stdout ?? '') + (e.stderr ?? '') }
      }
    },
  }
}

/** A line the agent logs once its acquisition runs (parsers and scenarios loaded). */
const AGENT_READY_LINE = 'Starting processing data'

export interface TestDecision {
  value: string
  scope?: 'Ip' | 'Range'
  origin?: string
  scenario?: string
  duration?: string
  type?: string
}

/** Logs in as the machine and returns a JWT. */
export async function machineToken(cs: CrowdsecHandle): Promise<string> {
  const res = await fetch(`${cs.url}/v1/watchers/login`, {
    method: 'POST',
    headers: { 'user-agent': LAPI_USER_AGENT, 'content-type': 'application/json' },
    body: JSON.stringify({ machine_id: cs.machineId, password: cs.machinePassword }),
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`LAPI login failed: ${res.status} ${text}`)
  return (JSON.parse(text) as { token: string }).token
}

/** Posts one alert carrying these decisions, as the machine (like cscli decisions add does). */
export async function postDecisions(cs: CrowdsecHandle, decisions: TestDecision[]): Promise<void> {
  const token = await machineToken(cs)
  const now = new Date().toISOString()
  const alert = [
    {
      scenario: 'panel-test/manual',
      scenario_hash: '',
      scenario_version: '',
      message: 'test decisions',
      events_count: 1,
      start_at: now,
      stop_at: now,
      capacity: 0,
      leakspeed: '0',
      simulated: false,
      events: [],
      source: { scope: '', value: '' },
      decisions: decisions.map((d) => ({
        origin: d.origin ?? 'cscli',
        type: d.type ?? 'ban',
        scope: d.scope ?? (d.value.includes('/') ? 'Range' : 'Ip'),
        value: d.value,
        duration: d.duration ?? '4h',
        scenario: d.scenario ?? 'panel-test/manual',
      })),
    },
  ]
  const res = await fetch(`${cs.url}/v1/alerts`, {
    method: 'POST',
    headers: { 'user-agent': LAPI_USER_AGENT, 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(alert),
  })
  if (res.status !== 201) throw new Error(`posting decisions failed: ${res.status} ${await res.text()}`)
}

/** What the bouncer sees for an address (decision values and origins; [] for none). */
export async function decisionsFor(
  cs: CrowdsecHandle,
  ip: string,
): Promise<Array<{ id: number; value: string; origin: string; scope: string; type: string; scenario: string; duration: string }>> {
  const res = await fetch(`${cs.url}/v1/decisions?ip=${encodeURIComponent(ip)}`, {
    headers: { 'user-agent': LAPI_USER_AGENT, 'x-api-key': cs.bouncerKey },
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`GET /v1/decisions?ip=${ip} answered ${res.status}: ${text}`)
  return (JSON.parse(text) as never[] | null) ?? []
}

/** The environment a panel needs to drive this engine. */
export function panelEnvFor(cs: CrowdsecHandle): Record<string, string> {
  return {
    LAPI_URL: cs.url,
    LAPI_MACHINE_ID: cs.machineId,
    LAPI_MACHINE_PASSWORD: cs.machinePassword,
    LAPI_BOUNCER_KEY: cs.bouncerKey,
    CROWDSEC_CONFIG_DIR: cs.configDir,
    CROWDSEC_HUB_DIR: cs.hubDir,
    CROWDSEC_DATA_DIR: cs.dataDir,
    ...(cs.appsecUrl ? { LAPI_APPSEC_URL: cs.appsecUrl } : {}),
  }
}

type TestAlert = {
  id: number
  scenario: string
  source?: { ip?: string; value?: string }
  decisions: Array<{ value: string; type: string }> | null
}
/**
 * The alerts the engine holds whose source is `ip`, with their decisions. Filtered
 * here: the local API's `ip` filter matches decisions, so it never finds an alert
 * that made none (true_detect_mode).
 */
export async function alertsFor(cs: CrowdsecHandle, ip: string): Promise<TestAlert[]> {
  const token = await machineToken(cs)
  const res = await fetch(`${cs.url}/v1/alerts?limit=1000`, {
    headers: { 'user-agent': LAPI_USER_AGENT, authorization: `Bearer ${token}` },
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`GET /v1/alerts answered ${res.status}: ${text}`)
  return ((JSON.parse(text) as TestAlert[] | null) ?? []).filter((a) => a.source?.ip === ip || a.source?.value === ip)
}
