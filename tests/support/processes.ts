import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, openSync, readFileSync, closeSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// Starting and stopping the real components: each by its own PID, never by name.

const _running = new Set<ChildProcess>()
const _tempDirs: string[] = []
process.on('exit', () => {
  for (const c of _running) { try { c.kill('SIGKILL') } catch { /* gone */ } }
  removeTempDirs()
})

/** Called after each test file (tests/support/file-teardown.ts): vitest may end a worker without an exit event. */
export function removeTempDirs(): void {
  for (const d of _tempDirs.splice(0)) { try { rmSync(d, { recursive: true, force: true }) } catch { /* best effort */ } }
}

/** A temporary folder removed when the test process exits. */
export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  _tempDirs.push(dir)
  return dir
}

export interface ManagedProcess { pid: number; logFile: string; exited: Promise<number | null>; stop(): Promise<void> }

export function requireBinary(path: string, name: string): void {
  if (!existsSync(path)) throw new Error(`${name} is not installed: run bash scripts/test.sh, which installs it`)
}

export function startProcess(cmd: string, args: string[], opts: { env?: Record<string, string>; cwd?: string; logFile: string }): ManagedProcess {
  const fd = openSync(opts.logFile, 'a')
  const child = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  _running.add(child)
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => { _running.delete(child); resolve(code) }))
  child.on('error', () => {})
  return {
    pid: child.pid!, logFile: opts.logFile, exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    },
  }
}

export function tailFile(path: string, lines = 30): string {
  try { return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n') } catch { return '(no log)' }
}

export async function waitFor(check: () => Promise<boolean>, opts: { timeoutMs: number; what: string; logFile?: string }): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs
  for (;;) {
    try { if (await check()) return } catch { /* not yet */ }
    if (Date.now() > deadline) {
      throw new Error(`${opts.what} was not ready within ${opts.timeoutMs} ms${opts.logFile ? `; log tail:\n${tailFile(opts.logFile)}` : ''}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}
