import { spawn, type ChildProcess } from 'node:child_process'
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Starting and stopping the real components: each by its own PID, never by name.

const _running = new Set<ChildProcess>()
const _tempDirs: string[] = []
const _exitHooks: Array<() => void> = []

/** Kills (SIGKILL) every child still running that was started here, and runs the registered exit hooks. */
function _killAll(): void {
  for (const c of _running) {
    try {
      c.kill('SIGKILL')
      if (c.pid) _unregister(c.pid)
    } catch {
      /* gone */
    }
  }
  _running.clear()
  for (const hook of _exitHooks.splice(0)) {
    try {
      hook()
    } catch {
      /* best effort */
    }
  }
}

// Safety net: a test process that ends (normally, by an uncaught error, or by a
// termination signal) takes the components it started with it.
process.on('exit', () => {
  _killAll()
  removeTempDirs()
})
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  const onSignal = () => {
    _killAll()
    removeTempDirs()
    // Default behaviour once we are done, unless someone else handles the signal too.
    if (process.listenerCount(sig) === 1) {
      process.off(sig, onSignal)
      process.kill(process.pid, sig)
    }
  }
  process.on(sig, onSignal)
}

// Registry of started children (one small file each, outside the temp folders), so a
// later run can end what a test process killed with SIGKILL left behind. An entry
// is acted on only when its owner is dead AND the PID still has the recorded start
// time and command line (so a reused PID is never touched).
const REGISTRY_DIR = join(existsSync('/run/lock') ? '/run/lock' : tmpdir(), 'panel-test-processes')

function _procIdentity(pid: number): { startTime: string; cmdline: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? ''
    return { startTime, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8') }
  } catch {
    return null
  }
}

function _pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function _register(pid: number): void {
  const id = _procIdentity(pid)
  if (!id) return
  try {
    mkdirSync(REGISTRY_DIR, { recursive: true })
    writeFileSync(join(REGISTRY_DIR, `${pid}.json`), JSON.stringify({ owner: process.pid, pid, ...id }))
  } catch {
    /* best effort */
  }
}

function _unregister(pid: number): void {
  try {
    unlinkSync(join(REGISTRY_DIR, `${pid}.json`))
  } catch {
    /* gone */
  }
}

const _dirEntry = (dir: string) => join(REGISTRY_DIR, `dir-${Buffer.from(dir).toString('base64url')}.json`)
function _registerDir(dir: string): void {
  try {
    mkdirSync(REGISTRY_DIR, { recursive: true })
    writeFileSync(_dirEntry(dir), JSON.stringify({ owner: process.pid, dir }))
  } catch {
    /* best effort */
  }
}
function _unregisterDir(dir: string): void {
  try {
    unlinkSync(_dirEntry(dir))
  } catch {
    /* gone */
  }
}

let _reaped = false
function _reapOnce(): void {
  if (_reaped) return
  _reaped = true
  reapOrphans()
}
/**
 * Kills (SIGKILL) components left running by test processes that no longer exist, and
 * removes their temp folders. Runs once per test process, before its first start. Returns the PIDs killed.
 */
export function reapOrphans(): number[] {
  const killed: number[] = []
  let names: string[] = []
  try {
    names = readdirSync(REGISTRY_DIR)
  } catch {
    return killed
  }
  for (const name of names) {
    const file = join(REGISTRY_DIR, name)
    try {
      const e = JSON.parse(readFileSync(file, 'utf8')) as { owner: number; pid: number; startTime: string; cmdline: string; dir?: string }
      if (_pidAlive(e.owner)) continue
      if (e.dir) {
        // A temp folder of a dead test process (only ever one made by makeTempDir under tmpdir()).
        if (e.dir.startsWith(`${tmpdir()}/`)) rmSync(e.dir, { recursive: true, force: true })
        unlinkSync(file)
        continue
      }
      const now = _procIdentity(e.pid)
      if (now && now.startTime === e.startTime && now.cmdline === e.cmdline) {
        process.kill(e.pid, 'SIGKILL')
        killed.push(e.pid)
      }
      unlinkSync(file)
    } catch {
      /* unreadable or raced: leave it */
    }
  }
  return killed
}

/** Runs `hook` synchronously when the test process exits (for resources that are not child processes). */
export function onProcessExit(hook: () => void): () => void {
  _exitHooks.push(hook)
  return () => {
    const i = _exitHooks.indexOf(hook)
    if (i >= 0) _exitHooks.splice(i, 1)
  }
}

/** Called after each test file (tests/support/file-teardown.ts): vitest may end a worker without an exit event. */
export function removeTempDirs(): void {
  for (const d of _tempDirs.splice(0)) {
    try {
      rmSync(d, { recursive: true, force: true })
    } catch {
      /* best effort */
    }
    _unregisterDir(d)
  }
}

/** A temporary folder removed after the test file (or when the test process exits). */
export function makeTempDir(prefix: string): string {
  _reapOnce()
  const dir = mkdtempSync(join(tmpdir(), prefix))
  _tempDirs.push(dir)
  _registerDir(dir)
  return dir
}

export interface ManagedProcess {
  pid: number
  logFile: string
  /** Resolves with the exit code (null when ended by a signal). */
  exited: Promise<number | null>
  /** True until the process has exited. */
  readonly running: boolean
  /** SIGTERM, wait for the exit, SIGKILL after `graceMs` (5 s). Resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>
  /** Sends a signal to this process only (e.g. SIGHUP for a reload). */
  signal(sig: NodeJS.Signals): void
}

/** Throws the standard "not installed" error when `path` does not exist. */
export function requireBinary(path: string, name: string): void {
  if (!existsSync(path)) throw new Error(`${name} is not installed: run bash scripts/test.sh, which installs it`)
}

/**
 * Starts `cmd` directly (no shell, so `pid` is the program's own), with stdout and
 * stderr appended to `logFile`. The environment is the test process's plus `env`.
 */
export function startProcess(
  cmd: string,
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; logFile: string },
): ManagedProcess {
  const fd = openSync(opts.logFile, 'a')
  let child: ChildProcess
  try {
    child = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', fd, fd] })
  } finally {
    closeSync(fd)
  }
  _reapOnce()
  let exitCode: number | null | undefined
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      exitCode = code
      _running.delete(child)
      if (child.pid) _unregister(child.pid)
      resolve(code)
    })
    child.on('error', () => {
      if (!child.pid) {
        exitCode = null
        resolve(null)
      }
    })
  })
  if (!child.pid) throw new Error(`could not start ${cmd} (${args.join(' ')})`)
  _running.add(child)
  _register(child.pid)
  return {
    pid: child.pid,
    logFile: opts.logFile,
    exited,
    get running() {
      return exitCode === undefined
    },
    async stop(graceMs = 5_000) {
      if (exitCode !== undefined) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => {
        if (exitCode === undefined) child.kill('SIGKILL')
      }, graceMs)
      await exited
      clearTimeout(timer)
    },
    signal(sig) {
      if (exitCode === undefined) child.kill(sig)
    },
  }
}

/**
 * A child spawned elsewhere (the panel, whose output the harness reads itself) ends with the
 * test process like the components started here, and a later run reaps it when that process
 * was killed: a benchmark that timed out left its panel running for the rest of the run.
 */
export function manageChild(child: ChildProcess): void {
  const pid = child.pid
  if (!pid) return
  _reapOnce()
  _running.add(child)
  _register(pid)
  child.on('exit', () => {
    _running.delete(child)
    _unregister(pid)
  })
}

/** The last `lines` lines of a file ('(no log)' when it cannot be read). */
export function tailFile(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log)'
  }
}

/**
 * Polls `check` every 50 ms until it returns true. Throws after `timeoutMs`, or as
 * soon as `process` exits, with the tail of `logFile` (or of the process's log).
 */
export async function waitFor(
  check: () => Promise<boolean>,
  opts: { timeoutMs: number; what: string; logFile?: string; process?: ManagedProcess; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs
  const logFile = opts.logFile ?? opts.process?.logFile
  const fail = (why: string) => new Error(`${opts.what} ${why}${logFile ? `; log tail (${logFile}):\n${tailFile(logFile)}` : ''}`)
  let lastError = ''
  for (;;) {
    if (opts.process && !opts.process.running) throw fail(`exited (code ${await opts.process.exited}) before it was ready`)
    const remaining = Math.max(1, deadline - Date.now())
    let timer: NodeJS.Timeout | undefined
    try {
      const ok = await Promise.race([
        check(),
        new Promise<boolean>((_, reject) => {
          timer = setTimeout(() => reject(new Error('check timed out')), Math.min(remaining, 5_000))
        }),
      ])
      if (ok) return
    } catch (err) {
      lastError = (err as Error)?.message ?? String(err)
    } finally {
      clearTimeout(timer)
    }
    if (Date.now() >= deadline) throw fail(`was not ready within ${opts.timeoutMs} ms${lastError ? ` (last error: ${lastError})` : ''}`)
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 50))
  }
}

/** Milliseconds since `t0` (performance.now() based), for start-time reports. */
export function elapsedMs(t0: number): number {
  return Math.round(performance.now() - t0)
}
