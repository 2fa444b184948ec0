import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { getDb, runWrite } from './db'

/** This process's identity for leases and job ownership. */
export const INSTANCE_ID = randomUUID()

/**
 * Takes (or renews) a named lease held in the database, so that a second panel
 * sharing the database can never hold it at the same time.
 */
export async function acquireLease(name: string, ttlMs: number): Promise<boolean> {
  const now = Date.now()
  return runWrite(async () => {
    const r = await getDb().run(sql`INSERT INTO leases (name, holder, expires_at_ms) VALUES (${name}, ${INSTANCE_ID}, ${now + ttlMs})
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
      WHERE leases.holder = ${INSTANCE_ID} OR leases.expires_at_ms < ${now}`)
    return r.rowsAffected > 0
  })
}

export async function releaseLease(name: string): Promise<void> {
  await runWrite(() => getDb().run(sql`DELETE FROM leases WHERE name = ${name} AND holder = ${INSTANCE_ID}`))
}
