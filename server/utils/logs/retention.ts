import { getClient, getDb, runWrite } from '../core/db'
import { getSetting } from '../core/settings'
import { writeAudit, systemActor } from '../core/audit'
import { ATTEMPT_RETENTION_MS, deleteAttemptsOlderThan } from '../auth/attempts'
import { rollupCleanupStatements, rollupStatements, textIndexDeleteStatement } from './rollup'

// Retention: rows older than logs.retention_days, then the oldest rows beyond
// logs.max_entries (audit rows included), deleted in batches of
// DELETE_BATCH_ROWS, each its own short write transaction that also subtracts
// the batch from the hourly roll-ups, with a pause between batches so that
// requests and ingestion go on during a long sweep.

export const DELETE_BATCH_ROWS = 2_000
const _PAUSE_MS = 5
const _DAY_MS = 86_400_000

export interface PruneResult {
  removed_by_age: number
  removed_by_count: number
  login_attempts_cutoff: string
  removed_login_attempts: number
  removed_totp_attempts: number
}

async function _deleteBatch(condition: string, args: Array<string | number>): Promise<number> {
  return runWrite(async () => {
    const found = await getClient().execute({ sql: `SELECT id FROM logs WHERE ${condition} ORDER BY id LIMIT ${DELETE_BATCH_ROWS}`, args })
    if (!found.rows.length) return 0
    const ids = JSON.stringify(found.rows.map((r) => Number(r.id)))
    const inBatch = 'id IN (SELECT value FROM json_each(?))'
    await getClient().batch(
      [
        // Only rows already rolled up are subtracted from the roll-ups.
        ...rollupStatements(`${inBatch} AND id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1)`, [ids], -1),
        ...rollupCleanupStatements(inBatch, [ids]),
        textIndexDeleteStatement(inBatch, [ids]),
        { sql: `DELETE FROM logs WHERE ${inBatch}`, args: [ids] },
      ],
      'write',
    )
    return found.rows.length
  })
}

async function _deleteAll(condition: string, args: Array<string | number>): Promise<number> {
  let total = 0
  for (;;) {
    const n = await _deleteBatch(condition, args)
    total += n
    if (n < DELETE_BATCH_ROWS) return total
    await new Promise((r) => setTimeout(r, _PAUSE_MS))
  }
}

/** The retention sweep (task logs:prune). Writes one audit row per run, also when it fails. */
export async function pruneLogs(nowMs = Date.now()): Promise<PruneResult> {
  const actor = systemActor('logs-prune')
  try {
    const days = await getSetting<number>('logs.retention_days')
    const maxEntries = await getSetting<number>('logs.max_entries')
    const byAge = await _deleteAll('ts_ms < ?', [nowMs - days * _DAY_MS])
    // The id of the newest row past the cap: it and everything older go.
    const past = await getClient().execute({ sql: 'SELECT id FROM logs ORDER BY id DESC LIMIT 1 OFFSET ?', args: [maxEntries] })
    const byCount = past.rows.length ? await _deleteAll('id <= ?', [Number(past.rows[0]!.id)]) : 0
    // Login and TOTP attempt rows older than 24 h (spec Limits: retention sweep).
    const attemptsCutoffMs = nowMs - ATTEMPT_RETENTION_MS
    const attempts = await runWrite(() => deleteAttemptsOlderThan(getDb(), attemptsCutoffMs))
    const result = {
      removed_by_age: byAge,
      removed_by_count: byCount,
      login_attempts_cutoff: new Date(attemptsCutoffMs).toISOString(),
      removed_login_attempts: attempts.login,
      removed_totp_attempts: attempts.totp,
    }
    await writeAudit(actor, 'logs_prune', { ...result, retention_days: days, max_entries: maxEntries })
    return result
  } catch (err) {
    await writeAudit(actor, 'logs_prune_failed', { error: (err as Error).message.slice(0, 500) }).catch(() => {})
    throw err
  }
}

/** Compacts the database file (task logs:vacuum, monthly). */
export async function vacuumDatabase(): Promise<void> {
  await runWrite(async () => {
    await getClient().execute('VACUUM')
  })
  await writeAudit(systemActor('logs-vacuum'), 'database_vacuum', {})
}
