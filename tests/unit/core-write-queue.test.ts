import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { getClient, runWrite, writeTransaction } from '../../server/utils/core/db'
import { emitPanelEvent, onPanelEvent } from '../../server/utils/ops/events'
import { useMigratedDatabase } from '../support/migrated-db'

useMigratedDatabase('core-write-queue-', async () => {
  await getClient().execute('CREATE TABLE t (step TEXT)')
})

describe('work a write transaction starts without awaiting it (real libSQL file)', () => {
  it("an event's listener raised inside a transaction writes after it commits, through the queue, without SQLITE_BUSY", async () => {
    let listenerWrite: Promise<unknown> | undefined
    const off = onPanelEvent(() => {
      // Like the notification worker: a write of its own, not awaited by the emitter.
      listenerWrite = runWrite(() => getClient().execute("INSERT INTO t VALUES ('listener')"))
    })
    try {
      await writeTransaction(async (tx) => {
        await tx.run(sql`INSERT INTO t VALUES ('transaction')`)
        emitPanelEvent('config_change', { action: 'test' })
        // The listener's write waits in the queue: it cannot have run inline meanwhile.
        await new Promise((r) => setTimeout(r, 50))
        await tx.run(sql`INSERT INTO t VALUES ('transaction, later')`)
      })
      await listenerWrite
    } finally {
      off()
    }
    const steps = (await getClient().execute('SELECT step FROM t ORDER BY rowid')).rows.map((r) => r.step)
    expect(steps).toEqual(['transaction', 'transaction, later', 'listener'])
  })
})
