import cronstrue from 'cronstrue'
import { Cron } from 'croner'

/**
 * A cron expression in words and its next runs in UTC (the panel runs its tasks
 * in UTC), or why it is not one. cronstrue words it; croner, the scheduler the
 * server itself uses, computes the runs, so they are the ones that will happen.
 */
export function describeCron(expr: string, runs = 3): { words: string; next: string[] } | { error: string } {
  try {
    const next = new Cron(expr.trim(), { paused: true, timezone: 'UTC' })
      .nextRuns(runs)
      .map((d) => `${d.toISOString().replace('T', ' ').slice(0, 16)} UTC`)
    return { words: `${cronstrue.toString(expr.trim(), { use24HourTimeFormat: true, verbose: true })} (UTC)`, next }
  } catch (e) {
    return { error: `not a cron expression: ${e instanceof Error ? e.message : String(e)}` }
  }
}
