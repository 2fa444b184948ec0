import { eq } from 'drizzle-orm'
import { runtimeState } from '../../../db/schema'
import { getDb, type Executor } from './db'

/** Small JSON records of the panel's own state (last reconcile, task runs). */
export async function readRuntimeState<T>(key: string, exec: Executor = getDb()): Promise<T | undefined> {
  const row = await exec.select().from(runtimeState).where(eq(runtimeState.key, key)).get()
  return row ? (JSON.parse(row.value) as T) : undefined
}

export async function writeRuntimeState(exec: Executor, key: string, value: unknown): Promise<void> {
  const now = new Date().toISOString()
  await exec
    .insert(runtimeState)
    .values({ key, value: JSON.stringify(value), updatedAt: now })
    .onConflictDoUpdate({ target: runtimeState.key, set: { value: JSON.stringify(value), updatedAt: now } })
}

// --- background runs ----------------------------------------------------------
// The last run of every task and loop, kept in this process's memory: loops run
// every few hundred milliseconds to a few seconds, and a database write per run
// would queue behind every request's write. /api/system/health shows them
// (they describe this process, like the rest of that answer).

export type BackgroundKind = 'task' | 'loop'
export interface BackgroundRun {
  kind: BackgroundKind
  /** never: declared but not run yet in this process (a monthly task right after start). */
  last_status: 'never' | 'running' | 'ok' | 'failed'
  last_start_at: string | null
  last_end_at: string | null
  last_duration_ms: number | null
  /** The failed run's error (already redacted by whoever raised it: engine and proxy text is). */
  last_error: string | null
  /** What a task returned (counts of rows deleted and the like), null for a loop. */
  last_result: unknown
  runs: number
  failures: number
}

const _runs = new Map<string, BackgroundRun>()

function _runOf(name: string, kind: BackgroundKind): BackgroundRun {
  let run = _runs.get(name)
  if (!run) {
    run = {
      kind,
      last_status: 'never',
      last_start_at: null,
      last_end_at: null,
      last_duration_ms: null,
      last_error: null,
      last_result: null,
      runs: 0,
      failures: 0,
    }
    _runs.set(name, run)
  }
  return run
}

/** Lists a task or loop before it first runs, so health shows it from the start. */
export function declareBackgroundJob(name: string, kind: BackgroundKind): void {
  _runOf(name, kind)
}

export function recordRunStart(name: string, kind: BackgroundKind, startedAtMs: number): void {
  const run = _runOf(name, kind)
  run.last_status = 'running'
  run.last_start_at = new Date(startedAtMs).toISOString()
}

export function recordRunEnd(
  name: string,
  kind: BackgroundKind,
  startedAtMs: number,
  outcome: { error: string } | { result: unknown },
): void {
  const run = _runOf(name, kind)
  const endedAtMs = Date.now()
  run.runs++
  run.last_end_at = new Date(endedAtMs).toISOString()
  run.last_duration_ms = endedAtMs - startedAtMs
  if ('error' in outcome) {
    run.failures++
    run.last_status = 'failed'
    run.last_error = outcome.error
  } else {
    run.last_status = 'ok'
    run.last_error = null
    run.last_result = outcome.result ?? null
  }
}

/** Every declared or run task and loop, by name (a copy: callers cannot change the records). */
export function readBackgroundRuns(): Record<string, BackgroundRun> {
  return Object.fromEntries([..._runs].sort(([a], [b]) => a.localeCompare(b)).map(([name, run]) => [name, { ...run }]))
}
