/**
 * Debounced, single-flight runs of `fn`: every trigger within `delayMs` of the
 * first one shares one run (and its result); a trigger that arrives while a run
 * is under way waits for a run of its own after it, never beside it.
 */
export function createCoalescedRunner<T>(fn: () => Promise<T>, delayMs: number): (() => Promise<T>) & { runs(): number } {
  let queued: Promise<T> | undefined
  let running: Promise<unknown> = Promise.resolve()
  let runs = 0
  const trigger = () => {
    if (queued) return queued
    const previous = running
    const next: Promise<T> = new Promise<void>((r) => setTimeout(r, delayMs))
      .then(() => previous)
      .then(() => {
        // From here on, new triggers queue the run after this one.
        queued = undefined
        runs++
        return fn()
      })
    queued = next
    running = next.catch(() => {})
    return next
  }
  return Object.assign(trigger, { runs: () => runs })
}
