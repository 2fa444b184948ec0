import { describe, expect, it } from 'vitest'
import { createCoalescedRunner } from '../../server/utils/core/coalesce'

// The loop's background pushes go through one such runner: a burst of triggers
// gives one compare-and-push, and two never run side by side.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('createCoalescedRunner', () => {
  it('a burst of triggers within the delay gives one run, and every trigger gets its result', async () => {
    let calls = 0
    const run = createCoalescedRunner(async () => ++calls, 30)
    const results = await Promise.all(Array.from({ length: 10 }, () => run()))
    expect(calls).toBe(1)
    expect(results).toEqual(Array(10).fill(1))
  })

  it('a trigger during a run waits for a run of its own after it, never beside it', async () => {
    let active = 0,
      maxActive = 0,
      calls = 0
    const run = createCoalescedRunner(async () => {
      active++
      maxActive = Math.max(maxActive, active)
      calls++
      await sleep(40)
      active--
      return calls
    }, 5)
    const first = run()
    await sleep(20) // the first run is under way
    const second = run(),
      third = run()
    expect(await first).toBe(1)
    expect(await second).toBe(2)
    expect(await third).toBe(2)
    expect(maxActive).toBe(1)
    expect(run.runs()).toBe(2)
  })

  it('a failed run rejects its triggers and does not stop the next one', async () => {
    let n = 0
    const run = createCoalescedRunner(async () => {
      if (++n === 1) throw new Error('boom')
      return n
    }, 5)
    await expect(run()).rejects.toThrow('boom')
    expect(await run()).toBe(2)
  })
})
