import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { getDb, runWrite } from './db'

/** This process's identity for leases and job ownership. */
export const INSTANCE_ID = randomUUID()

/**
 * Takes (or renews) a named lease held in the database, so that a second panel
 * sharing the database can never hold it at the same time. The holder is this
 * process unless the caller names a longer-lived one (the log ingester's is the
 * machine and data folder, so a restarted panel takes its lease back at once).
 * False: another holder has it and it has not expired.
 */
export async function acquireLease(name: string, ttlMs: number, holder: string = INSTANCE_ID): Promise<boolean> {
  const now = Date.now()
  return runWrite(async () => {
    const r = await getDb().run(sql`INSERT INTO leases (name, holder, expires_at_ms) VALUES (${name}, ${holder}, ${now + ttlMs})
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
      WHERE leases.holder = ${holder} OR leases.expires_at_ms < ${now}`)
    return r.rowsAffected > 0
  })
}

export async function releaseLease(name: string, holder: string = INSTANCE_ID): Promise<void> {
  await runWrite(() => getDb().run(sql`DELETE FROM leases WHERE name = ${name} AND holder = ${holder}`))
}
