import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { getDb, writeTransaction } from '../../server/utils/core/db'
import { collectDesiredState, restoreDesiredState } from '../../server/utils/proxy/revisions/desired-state'
import { hosts, targetGroups } from '../../db/schema'
import { useMigratedDatabase } from '../support/migrated-db'

// A revision recorded before a migration added a column does not hold that column; restoring it
// must give the column the value the panel had then (its database default), not keep today's.

const now = new Date().toISOString()
useMigratedDatabase('revisions-restore-columns-', async () => {
  await getDb()
    .insert(targetGroups)
    .values({
      id: 1,
      name: 'web',
      targets: [{ address: '127.0.0.1:8080', weight: 1 }],
      scheme: 'http',
      lbPolicy: 'round_robin',
      createdAt: now,
      updatedAt: now,
    })
  await getDb().insert(hosts).values({
    id: 1,
    domain: 'app.example.test',
    aliases: [],
    targetGroupId: 1,
    tlsMode: 'none',
    tlsChallenge: 'http',
    wafFamilies: [],
    customHandlers: [],
    headerRules: [],
    createdAt: now,
    updatedAt: now,
  })
})

describe('restoring a revision older than a column', () => {
  it('resets the column the stored state lacks to its default, and keeps every stored value', async () => {
    // The state as a revision from before custom handlers (migration 0040) stored it.
    const state = await collectDesiredState(getDb())
    const old = state.hosts!['1']!
    delete old.customHandlers
    delete old.customHandlersAt
    old.lanOnly = true
    // Since then the host got custom handlers at the other point of the chain.
    await getDb()
      .update(hosts)
      .set({ customHandlers: [{ handler: 'static_response', body: 'hi' }], customHandlersAt: 'after_security' })
      .where(eq(hosts.id, 1))

    await writeTransaction((tx) => restoreDesiredState(tx, state, 7))

    const host = await getDb().select().from(hosts).where(eq(hosts.id, 1)).get()
    expect(host?.customHandlers).toEqual([])
    expect(host?.customHandlersAt).toBe('before_proxy')
    expect(host?.lanOnly).toBe(true)
    expect(host?.domain).toBe('app.example.test')
  })
})
