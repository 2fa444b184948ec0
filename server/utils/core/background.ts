import { logger } from './log'
import { redactSecrets } from './redact'
import { recordRunEnd, recordRunStart, type BackgroundKind } from './runtime-state'

// The one way the panel runs something in the background: a nitro task
// (scheduled in nitro.config.ts, or started with runTask; defined with
// defineRecordedTask, recorded-task.ts) or a loop started by a plugin. Every run
// is recorded (runtime-state.ts) and shown by /api/system/health. No nitro
// import here: modules that unit tests load (the proxy loop) import this file.

/** Runs `run` and records its start, end, duration and outcome under `name`; rethrows its error. */
export async function recordRun<T>(
  name: string,
  kind: BackgroundKind,
  run: () => Promise<T>,
  summarize: (result: T) => unknown = () => null,
): Promise<T> {
  const startedAtMs = Date.now()
  recordRunStart(name, kind, startedAtMs)
  try {
    const result = await run()
    recordRunEnd(name, kind, startedAtMs, { result: summarize(result) })
    return result
  } catch (err) {
    // An error can quote a stored value (a download URL with its key, a credential the proxy refused).
    const error = await redactSecrets((err as Error)?.message || String(err)).catch(() => 'the error text was withheld (redaction failed)')
    recordRunEnd(name, kind, startedAtMs, { error })
    throw err
  }
}

export interface Loop {
  /** Stops scheduling; resolves once the run in progress (if any) has ended. */
  stop(): Promise<void>
}

/**
 * Runs `run` now (or after `firstDelayMs`), then again `nextDelayMs(...)` after
 * each run ends, until stopped. A failed run is recorded and reported; the loop goes on.
 * `nextDelayMs` gets the run's duration and whether it failed (for start-to-start
 * intervals and back-off).
 */
export function startLoop(
  name: string,
  opts: {
    run: () => Promise<unknown>
    nextDelayMs: (ran: { durationMs: number; failed: boolean }) => number
    firstDelayMs?: number
    /** How a failed run is reported besides its record (default: an error line naming the loop). */
    onFailure?: (err: unknown) => unknown
  },
): Loop {
  const onFailure = opts.onFailure ?? ((err: unknown) => logger.error(`${name}: ${(err as Error)?.message ?? err}`))
  let timer: NodeJS.Timeout | undefined
  let running: Promise<unknown> | undefined
  let stopped = false
  const tick = () => {
    const startedAtMs = Date.now()
    let failed = false
    running = recordRun(name, 'loop', opts.run)
      .catch(async (err) => {
        failed = true
        await onFailure(err)
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, opts.nextDelayMs({ durationMs: Date.now() - startedAtMs, failed }))
      })
  }
  if (opts.firstDelayMs) timer = setTimeout(tick, opts.firstDelayMs)
  else tick()
  return {
    async stop() {
      stopped = true
      if (timer) clearTimeout(timer)
      await running?.catch(() => {})
    },
  }
}
