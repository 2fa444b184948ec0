import { eventually } from './http'
import type { PanelHandle } from './panel'

// "Nothing happened during N ticks of a loop" is a count of the loop's runs, read from
// /api/system/health (core/runtime-state.ts), not a guess of how long N ticks take:
// on a loaded machine a loop runs late and a fixed sleep would see fewer ticks.

async function _run(panel: PanelHandle, cookie: string, name: string): Promise<{ runs: number; running: boolean }> {
  const res = await panel.request('/api/system/health', { cookie })
  const run = res.json?.background?.[name]
  if (res.status !== 200 || !run)
    throw new Error(`no background run named ${name} in /api/system/health: ${res.status} ${res.text.slice(0, 300)}`)
  return { runs: run.runs, running: run.last_status === 'running' }
}

/**
 * Resolves once `count` runs of the panel's loop (or task) `name` have started and ended
 * after this call. A run under way at the call started before it, so it does not count.
 */
export async function afterLoopRuns(panel: PanelHandle, cookie: string, name: string, count = 1): Promise<void> {
  const start = await _run(panel, cookie, name)
  const needed = start.runs + count + (start.running ? 1 : 0)
  const last = await eventually(
    () => _run(panel, cookie, name),
    (r) => r.runs >= needed,
    120_000,
    100,
  )
  if (!(last.runs >= needed)) throw new Error(`${name} ran ${last.runs - start.runs} of the ${count} times waited for`)
}
