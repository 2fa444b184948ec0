import { sql } from 'drizzle-orm'
import { logs } from '../../../db/schema'
import { getClient, getDb, runWrite } from '../core/db'
import { getSetting } from '../core/settings'
import { writeAudit, systemActor } from '../core/audit'
import { deleteLoginAttemptsOlderThan } from '../auth/attempts'

// Retention: rows older than logs.retention_days, then rows beyond
// logs.max_entries (audit rows included), deleted in bounded batches so a
// sweep never holds the write queue for long.

export const DELETE_BATCH_ROWS = 5_000

async function _deleteInBatches(where: () => ReturnType<typeof sql>): Promise<number> {
  let total = 0
  for (;;) {
    const r = await runWrite(() => getDb().run(sql`DELETE FROM logs WHERE id IN (SELECT id FROM logs WHERE ${where()} LIMIT ${DELETE_BATCH_ROWS})`))
    total += r.rowsAffected
    if (r.rowsAffected < DELETE_BATCH_ROWS) return total
    await new Promise((res) => setImmediate(res)) // let requests in between batches
  }
}

export async function pruneLogs(nowMs = Date.now()) {
  const days = await getSetting<number>('logs.retention_days')
  const maxEntries = await getSetting<number>('logs.max_entries')
  const cutoff = nowMs - days * 86_400_000
  const byAge = await _deleteInBatches(() => sql`${logs.tsMs} < ${cutoff}`)
  const threshold = await getDb().select({ id: logs.id }).from(logs).orderBy(sql`${logs.id} DESC`).limit(1).offset(maxEntries).get()
  const byCount = threshold ? await _deleteInBatches(() => sql`${logs.id} <= ${threshold.id}`) : 0
  await runWrite(() => deleteLoginAttemptsOlderThan(getDb(), nowMs - 24 * 3600_000))
  await writeAudit(systemActor('logs-prune'), 'logs_prune', { removed_by_age: byAge, removed_by_count: byCount, retention_days: days, max_entries: maxEntries })
  return { removed_by_age: byAge, removed_by_count: byCount }
}

export async function vacuumDatabase(): Promise<void> {
  await runWrite(async () => { await getClient().execute('VACUUM') })
  await writeAudit(systemActor('logs-vacuum'), 'database_vacuum', {})
}

