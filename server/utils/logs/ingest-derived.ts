import { getSetting } from '../core/settings'
import { clearTextIndex, indexLogText, rollUpLogs } from './rollup'

// What the ingester keeps up to date after reading (ingester.ts, end of each tick): the hourly
// roll-ups and the free-text index, each on its own cadence. Their timing state is one object.

const _ROLLUP_BACKLOG_ROWS = 100_000

const _state = {
  lastRollupMs: 0,
  lastTextIndexMs: 0,
  /** The last roll-up stopped on its budget: roll up again as soon as ingestion is idle. */
  rollupBehind: false,
  textIndexSetting: { on: true, readAtMs: 0 },
}

/**
 * Rolls up when ingestion is idle, every 10 s, or when the backlog would make queries slow
 * (queries add the rows not rolled up yet, so waiting costs them time, never correctness).
 * Audit rows arrive without the ingester: they are rolled up here too.
 */
export async function keepRollups(marks: { lastId: number; maxId: number }, ingested: number): Promise<void> {
  const backlog = marks.maxId - marks.lastId
  const sinceMs = Date.now() - _state.lastRollupMs
  if (
    backlog >= _ROLLUP_BACKLOG_ROWS ||
    (backlog > 0 && (sinceMs > 10_000 || (ingested === 0 && (_state.rollupBehind || sinceMs > 1_000))))
  ) {
    const covered = await rollUpLogs({ budgetMs: ingested === 0 ? 1_000 : 250 }) // chunks of 20,000 rows, requests go in between
    _state.rollupBehind = covered < backlog
    _state.lastRollupMs = Date.now()
  }
}

/** logs.text_index, read at most once a second (the loop ticks five times a second). */
async function _textIndexEnabled(): Promise<boolean> {
  if (Date.now() - _state.textIndexSetting.readAtMs >= 1_000)
    _state.textIndexSetting = { on: await getSetting<boolean>('logs.text_index'), readAtMs: Date.now() }
  return _state.textIndexSetting.on
}

/**
 * The free-text index follows the roll-ups: it is filled once they have caught
 * up (dashboards and stats first), in the same cadence (idle, or every 10 s
 * during a burst), and emptied when the setting is turned off. `marks` only
 * decide whether to start: indexLogText reads the marks again in each chunk.
 */
export async function keepTextIndex(marks: { textLastId: number; maxId: number }, ingested: number): Promise<void> {
  if (!(await _textIndexEnabled())) {
    if (marks.textLastId > 0) await clearTextIndex()
    return
  }
  const sinceMs = Date.now() - _state.lastTextIndexMs
  if (_state.rollupBehind || marks.maxId <= marks.textLastId || (ingested > 0 && sinceMs <= 10_000)) return
  await indexLogText({ budgetMs: ingested === 0 ? 1_000 : 250 })
  _state.lastTextIndexMs = Date.now()
}
