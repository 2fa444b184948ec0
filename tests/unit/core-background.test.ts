import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordRun, startLoop } from '../../server/utils/core/background'
import { declareBackgroundJob, readBackgroundRuns } from '../../server/utils/core/runtime-state'

const _SECRET = 'master-key-for-the-background-test-0123456789'
let dir: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'core-background-'))
  // The redaction of run errors reads the environment's secrets (no database open: those only).
  Object.assign(process.env, { PANEL_DATA_DIR: dir, PANEL_MASTER_KEY: _SECRET })
})
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

const _until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5))
  if (!check()) throw new Error('condition never held')
}

describe('recorded background runs', () => {
  it('a declared job is listed as never run', () => {
    declareBackgroundJob('test:declared', 'task')
    expect(readBackgroundRuns()['test:declared']).toMatchObject({
      kind: 'task',
      last_status: 'never',
      runs: 0,
      last_start_at: null,
      last_result: null,
    })
  })

  it('records a result, then a failure with its error redacted, and rethrows', async () => {
    expect(
      await recordRun(
        'test:task',
        'task',
        async () => ({ removed: 3 }),
        (r) => r,
      ),
    ).toEqual({ removed: 3 })
    expect(readBackgroundRuns()['test:task']).toMatchObject({
      last_status: 'ok',
      last_result: { removed: 3 },
      last_error: null,
      runs: 1,
      failures: 0,
    })
    await expect(
      recordRun('test:task', 'task', async () => {
        throw new Error(`refused ${_SECRET}`)
      }),
    ).rejects.toThrow(/refused/)
    const run = readBackgroundRuns()['test:task']!
    expect(run).toMatchObject({ last_status: 'failed', runs: 2, failures: 1, last_error: 'refused [redacted]' })
    expect(Date.parse(run.last_end_at!)).toBeGreaterThanOrEqual(Date.parse(run.last_start_at!))
  })

  it('a loop goes on after a failed run, reports it, and stop waits for the run in progress', async () => {
    let calls = 0
    const reported: string[] = []
    let finishedRuns = 0
    const loop = startLoop('test:loop', {
      run: async () => {
        calls++
        await new Promise((r) => setTimeout(r, 5))
        finishedRuns++
        if (calls === 1) throw new Error('first run fails')
      },
      nextDelayMs: () => 1,
      onFailure: (err) => {
        reported.push((err as Error).message)
      },
    })
    await _until(() => calls >= 3)
    await loop.stop()
    const stoppedAt = calls
    expect(finishedRuns).toBe(stoppedAt) // the run in progress ended before stop resolved
    await new Promise((r) => setTimeout(r, 20))
    expect(calls).toBe(stoppedAt) // and no run started after it
    expect(reported).toEqual(['first run fails'])
    expect(readBackgroundRuns()['test:loop']).toMatchObject({
      kind: 'loop',
      last_status: 'ok',
      failures: 1,
      runs: stoppedAt,
      last_error: null,
    })
  })
})
