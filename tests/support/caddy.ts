import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freshRequest } from './admin-http'
import { freePort } from './ports'
import { requireBinary, startProcess, waitFor, type ManagedProcess, makeTempDir } from './processes'

const CADDY = '/usr/bin/caddy'

export interface CaddyHandle {
  adminUrl: string; adminListen: string; workDir: string; storageDir: string; logFile: string
  readonly pid: number
  stop(): Promise<void>
  /** Stops (if running) and starts again with only the bootstrap config, on the same admin port. */
  restart(): Promise<void>
  load(config: object): Promise<{ status: number; body: string }>
  getConfig(): Promise<unknown>
}

/** The stock Debian Caddy on a free loopback admin port, in its own temp folder. */
export async function startCaddy(opts: { workDir?: string } = {}): Promise<CaddyHandle> {
  requireBinary(CADDY, 'caddy')
  const workDir = opts.workDir ?? makeTempDir('caddy-')
  for (const d of ['data', 'config', 'home', 'storage']) mkdirSync(join(workDir, d), { recursive: true })
  const port = await freePort()
  const adminListen = `127.0.0.1:${port}`
  const adminUrl = `http://${adminListen}`
  const bootstrap = join(workDir, 'bootstrap.json')
  writeFileSync(bootstrap, JSON.stringify({ admin: { listen: adminListen, config: { persist: false } } }))
  const logFile = join(workDir, 'caddy.log')
  let proc: ManagedProcess

  const start = async () => {
    proc = startProcess(CADDY, ['run', '--config', bootstrap], {
      cwd: workDir, logFile,
      env: { XDG_DATA_HOME: join(workDir, 'data'), XDG_CONFIG_HOME: join(workDir, 'config'), HOME: join(workDir, 'home') },
    })
    await waitFor(async () => (await freshRequest(`${adminUrl}/config/`)).status === 200, { timeoutMs: 10_000, what: 'caddy admin API', logFile })
  }
  await start()
  return {
    adminUrl, adminListen, workDir, storageDir: join(workDir, 'storage'), logFile,
    get pid() { return proc.pid },
    stop: () => proc.stop(),
    async restart() { await proc.stop(); await start() },
    load: (config) => freshRequest(`${adminUrl}/load`, { method: 'POST', body: JSON.stringify(config) }),
    async getConfig() { const r = await freshRequest(`${adminUrl}/config/`); return JSON.parse(r.body) },
  }
}
