import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshRequest } from './admin-http'
import { edgeBinaries, STOCK_CADDY_BIN } from './edge-bins'
import type { NodeNamespace } from './netns'
import { freePort } from './ports'
import { makeTempDir, requireBinary, startProcess, waitFor, type ManagedProcess } from './processes'

export interface CaddyHandle {
  /** 'http://127.0.0.1:<port>' (the namespace's address instead of 127.0.0.1 in a network namespace) */
  adminUrl: string
  /** '127.0.0.1:<port>' (idem): every config sent to /load must carry it as admin.listen. */
  adminListen: string
  workDir: string
  /** The binary: the production Caddy with its plugins, or Debian's stock one. */
  bin: string
  /** An empty folder for `"storage": {"module": "file_system", "root": storageDir}`. */
  storageDir: string
  /** Caddy's stderr/stdout (JSON lines; with privateFs still readable by the test: the file was opened before). */
  logFile: string
  /** With privateFs: the folder every other path of the machine's tmp folder is hidden behind, inside this node. */
  privateFsHidden: string | null
  /** The current Caddy process (changes on restart). */
  readonly pid: number
  /** Milliseconds the last start took until the admin API answered. */
  readonly startMs: number
  stop(): Promise<void>
  /** Stops (if running) and starts again with only the bootstrap config, on the same admin port. */
  restart(): Promise<void>
  /** POST /load on a fresh connection. `force` adds Cache-Control: must-revalidate (reload even if unchanged). */
  load(config: object, opts?: { force?: boolean }): Promise<{ status: number; body: string }>
  /** GET /config/ (parsed JSON; null when no config). */
  getConfig(): Promise<unknown>
}

/** startCaddy's `privateFs`: true, or where to hide and which files each node gets its own copy of. */
export type PrivateFs = boolean | { hide?: string; copies?: string[] }

/**
 * Caddy started with an empty bootstrap config whose admin API listens on a free
 * loopback port, in its own folder (no Caddyfile there; XDG dirs and HOME inside
 * it; config persistence off). By default the production Caddy with every plugin
 * (deploy/proxy/caddy, built by scripts/build-edge.sh); `stock: true` runs
 * Debian's Caddy 2.6.2 for the compatibility suite.
 */
export async function startCaddy(
  opts: {
    workDir?: string
    stock?: boolean
    env?: Record<string, string>
    /** More of the bootstrap config: `admin` is merged into the admin block (remote admin, identity), the rest added (storage). */
    bootstrap?: { admin?: Record<string, unknown>; [key: string]: unknown }
    /** Other Host values the admin API accepts (a relay in front of it), besides its own listen address. */
    adminOrigins?: string[]
    /** Run inside this network namespace (netns.ts createNodeNamespaces): its admin API listens on the namespace's address. */
    netns?: NodeNamespace
    /**
     * A machine with a file system of its own (issue 41's nodes without a shared folder): Caddy
     * runs in a private mount namespace where `hide` (default the tmp folder, which holds every
     * other node's work folder, the panel's PROXY_DATA_DIR and log folder) is an empty tmpfs,
     * with only this node's work folder mounted back at its path. `copies`: files (a CA bundle
     * the configuration names) each node gets its own copy of, at the same path.
     * Check it with `nsenter -t <pid> -m ls <path>`.
     */
    privateFs?: PrivateFs
  } = {},
): Promise<CaddyHandle> {
  const bin = opts.stock ? STOCK_CADDY_BIN : edgeBinaries().caddy
  requireBinary(bin, 'caddy')
  const workDir = opts.workDir ?? makeTempDir('caddy-')
  for (const d of ['data', 'config', 'home', 'storage']) mkdirSync(join(workDir, d), { recursive: true })
  const port = await freePort()
  const adminListen = `${opts.netns?.address ?? '127.0.0.1'}:${port}`
  const adminUrl = `http://${adminListen}`
  const bootstrap = join(workDir, 'bootstrap.json')
  const { admin: adminExtra, ...configExtra } = opts.bootstrap ?? {}
  const origins = opts.adminOrigins ? { origins: [...opts.adminOrigins, adminListen] } : {}
  writeFileSync(
    bootstrap,
    JSON.stringify({ ...configExtra, admin: { listen: adminListen, config: { persist: false }, ...origins, ...adminExtra } }),
  )
  const logFile = join(workDir, 'caddy.log')
  let proc: ManagedProcess | undefined
  let startMs = 0

  const privateFs = opts.privateFs ? (opts.privateFs === true ? {} : opts.privateFs) : null
  const hidden = privateFs ? (privateFs.hide ?? tmpdir()).replace(/\/+$/, '') : null
  if (hidden && !workDir.startsWith(`${hidden}/`)) throw new Error(`privateFs: the work folder ${workDir} must be inside ${hidden}`)
  const copies = (privateFs?.copies ?? []).map((path, i) => {
    const own = join(workDir, `own-copy-${i}`)
    copyFileSync(path, own)
    return { path, own }
  })
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`
  const start = async () => {
    const t0 = performance.now()
    let argv = [bin, 'run', '--config', bootstrap]
    if (hidden) {
      // The work folder is held open (fd 3) across the tmpfs mount that hides it, then mounted
      // back from that descriptor (--no-canonicalize: mount must not resolve the path again).
      // unshare without --fork and sh's exec keep one PID from here to Caddy.
      const script = [
        'set -e',
        `exec 3< ${q(workDir)}`,
        `mount -t tmpfs -o mode=1777 tmpfs ${q(hidden)}`,
        `mkdir -p ${q(workDir)}`,
        `mount --no-canonicalize --bind /proc/self/fd/3 ${q(workDir)}`,
        'exec 3<&-',
        ...copies.flatMap((c) => [`mkdir -p "$(dirname ${q(c.path)})"`, `: > ${q(c.path)}`, `mount --bind ${q(c.own)} ${q(c.path)}`]),
        `exec ${argv.map(q).join(' ')}`,
      ].join('\n')
      argv = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script]
    }
    // `ip netns exec` enters the namespace and execs Caddy: the same PID, stopped as any other.
    if (opts.netns) argv = ['ip', 'netns', 'exec', opts.netns.name, ...argv]
    proc = startProcess(argv[0]!, argv.slice(1), {
      cwd: workDir,
      logFile,
      env: { XDG_DATA_HOME: join(workDir, 'data'), XDG_CONFIG_HOME: join(workDir, 'config'), HOME: join(workDir, 'home'), ...opts.env },
    })
    try {
      await waitFor(async () => (await freshRequest(`${adminUrl}/config/`, { timeoutMs: 2_000 })).status === 200, {
        timeoutMs: 60_000,
        what: `caddy (admin ${adminListen})`,
        process: proc,
      })
    } catch (err) {
      await proc.stop()
      throw err
    }
    startMs = Math.round(performance.now() - t0)
  }
  await start()
  return {
    adminUrl,
    adminListen,
    workDir,
    bin,
    storageDir: join(workDir, 'storage'),
    logFile,
    privateFsHidden: hidden,
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
    load: (config, o = {}) =>
      freshRequest(`${adminUrl}/load`, {
        method: 'POST',
        body: JSON.stringify(config),
        headers: o.force ? { 'cache-control': 'must-revalidate' } : {},
      }),
    async getConfig() {
      const r = await freshRequest(`${adminUrl}/config/`)
      if (r.status !== 200) throw new Error(`GET ${adminUrl}/config/ answered ${r.status}: ${r.body}`)
      return JSON.parse(r.body)
    },
  }
}
