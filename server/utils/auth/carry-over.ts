import { and, count, eq, inArray } from 'drizzle-orm'
import { apiTokens, passkeys, pushSubscriptions, sessions, totpRecoveryCodes, users } from '../../../db/schema'
import type { Db, Executor } from '../core/db'
import { conflict } from '../core/errors'

// A restore brings back the snapshot's configuration, not its credentials
// (issue 33, docs/backups.md). Before the snapshot replaces the live database,
// what was done to credentials since it was taken is applied to it:
// - a token revoked since stays revoked; a token the live database no longer
//   has (its user was deleted, or an earlier restore dropped it) is revoked;
//   an admin token narrowed to read (its owner was demoted) stays read;
// - a user deleted since stays deleted (with their tokens, recovery codes and
//   push subscriptions); a user demoted since stays a viewer;
// - a user whose password or second factor changed since keeps the new ones:
//   an old password that leaked does not come back with the snapshot;
// - the passkeys of a user still there are the live ones: a key removed since
//   (a lost device) does not come back, one added since stays;
// - every session ends, the snapshot's and the live ones alike.
// Users and tokens created after the snapshot are not in it and are gone: the
// answer names them. Users are matched by id and creation time (an id can be
// handed out again after an earlier restore), tokens by the SHA-256 of their
// secret. Nothing here reads or returns a secret, hash or token prefix.

const RESTORE_ACTOR = 'system:backup-restore'

type TokenRef = { id: number; name: string; user_email: string }
type UserRef = { id: number; email: string }

export interface CarriedOver {
  /** What the live database had that the snapshot now has too. */
  kept: {
    api_tokens_revoked: TokenRef[]
    api_tokens_narrowed: TokenRef[]
    users_deleted: UserRef[]
    users_demoted: UserRef[]
    credentials_changed: UserRef[]
  }
  /** Created after the snapshot was taken: not in it, so gone after the restore. */
  not_in_backup: { users: UserRef[]; api_tokens: TokenRef[] }
  /** Sessions the live database held; every one of them ended (so did the snapshot's). */
  sessions_ended: number
}

const _userKey = (u: { id: number; createdAt: string }) => `${u.id}/${u.createdAt}`

/**
 * Applies to `snapshot` (a migrated backup, not yet in place) what changed to
 * credentials in `live` since it was taken, in one transaction of the snapshot.
 * Refuses (409, the snapshot untouched) when the result would have no admin.
 */
export async function carryOverCredentials(live: Executor, snapshot: Db, backupId: number | string): Promise<CarriedOver> {
  const liveUsers = new Map((await live.select().from(users)).map((u) => [_userKey(u), u]))
  const liveTokens = new Map((await live.select().from(apiTokens)).map((t) => [t.tokenHash, t]))
  const liveEmailOf = new Map([...liveUsers.values()].map((u) => [u.id, u.email]))
  const liveSessions = (await live.select({ n: count() }).from(sessions).get())?.n ?? 0

  return snapshot.transaction(
    async (tx) => {
      const out: CarriedOver = {
        kept: { api_tokens_revoked: [], api_tokens_narrowed: [], users_deleted: [], users_demoted: [], credentials_changed: [] },
        not_in_backup: { users: [], api_tokens: [] },
        sessions_ended: liveSessions,
      }
      const snapUsers = await tx.select().from(users)
      const snapKeys = new Set(snapUsers.map(_userKey))
      const emailOf = new Map(snapUsers.map((u) => [u.id, u.email]))
      const deletedIds: number[] = []

      for (const u of snapUsers) {
        const now = liveUsers.get(_userKey(u))
        if (!now) {
          deletedIds.push(u.id)
          out.kept.users_deleted.push({ id: u.id, email: u.email })
          continue
        }
        const set: Partial<typeof users.$inferInsert> = {}
        if (u.role === 'admin' && now.role !== 'admin') {
          set.role = now.role
          out.kept.users_demoted.push({ id: u.id, email: u.email })
        }
        if (now.passwordHash !== u.passwordHash || now.totpSecret !== u.totpSecret || now.totpEnabled !== u.totpEnabled) {
          Object.assign(set, { passwordHash: now.passwordHash, totpSecret: now.totpSecret, totpEnabled: now.totpEnabled })
          out.kept.credentials_changed.push({ id: u.id, email: u.email })
          // The recovery codes belong to the second factor the live database holds.
          await tx.delete(totpRecoveryCodes).where(eq(totpRecoveryCodes.userId, u.id))
          const codes = await live
            .select({
              codeHash: totpRecoveryCodes.codeHash,
              createdAtMs: totpRecoveryCodes.createdAtMs,
              usedAtMs: totpRecoveryCodes.usedAtMs,
            })
            .from(totpRecoveryCodes)
            .where(eq(totpRecoveryCodes.userId, u.id))
          if (codes.length) await tx.insert(totpRecoveryCodes).values(codes.map((c) => ({ ...c, userId: u.id })))
        }
        // A TOTP step already used stays used: no replay of a code seen after the snapshot.
        if (now.totpLastStep > u.totpLastStep) set.totpLastStep = now.totpLastStep
        if (Object.keys(set).length) await tx.update(users).set(set).where(eq(users.id, u.id))
      }

      for (const t of await tx.select().from(apiTokens)) {
        const ref = { id: t.id, name: t.name, user_email: emailOf.get(t.userId) ?? '' }
        const now = liveTokens.get(t.tokenHash)
        const ownerGone = deletedIds.includes(t.userId)
        if (t.revokedAtMs === null && (!now || now.revokedAtMs !== null || ownerGone)) {
          await tx
            .update(apiTokens)
            .set({ revokedAtMs: now?.revokedAtMs ?? Date.now(), revokedBy: now?.revokedBy ?? RESTORE_ACTOR })
            .where(eq(apiTokens.id, t.id))
          out.kept.api_tokens_revoked.push(ref)
        } else if (t.revokedAtMs === null && t.scope === 'admin' && now?.scope === 'read') {
          await tx.update(apiTokens).set({ scope: 'read' }).where(eq(apiTokens.id, t.id))
          out.kept.api_tokens_narrowed.push(ref)
        }
      }
      // A demoted user's admin tokens narrow, as a demotion does (server/utils/auth/users.ts).
      const demoted = out.kept.users_demoted.map((u) => u.id)
      if (demoted.length)
        await tx
          .update(apiTokens)
          .set({ scope: 'read' })
          .where(and(inArray(apiTokens.userId, demoted), eq(apiTokens.scope, 'admin')))

      if (deletedIds.length) {
        // By hand, as deleteUser does: the cascade is not relied upon.
        await tx.delete(apiTokens).where(inArray(apiTokens.userId, deletedIds))
        await tx.delete(totpRecoveryCodes).where(inArray(totpRecoveryCodes.userId, deletedIds))
        await tx.delete(pushSubscriptions).where(inArray(pushSubscriptions.userId, deletedIds))
        await tx.delete(users).where(inArray(users.id, deletedIds))
      }
      await _carryPasskeys(live, tx, new Set(snapUsers.filter((u) => liveUsers.has(_userKey(u))).map((u) => u.id)))
      await tx.delete(sessions)

      const admins = (await tx.select({ n: count() }).from(users).where(eq(users.role, 'admin')).get())?.n ?? 0
      if (admins === 0)
        throw conflict(
          `${typeof backupId === 'number' ? `backup ${backupId}` : backupId} cannot be restored: every admin it holds has since been deleted or demoted, so the panel would have no admin; restore a newer backup, or promote one of them again first`,
        )

      for (const u of liveUsers.values()) if (!snapKeys.has(_userKey(u))) out.not_in_backup.users.push({ id: u.id, email: u.email })
      const snapHashes = new Set((await tx.select({ h: apiTokens.tokenHash }).from(apiTokens)).map((r) => r.h))
      for (const t of liveTokens.values())
        if (t.revokedAtMs === null && !snapHashes.has(t.tokenHash))
          out.not_in_backup.api_tokens.push({ id: t.id, name: t.name, user_email: liveEmailOf.get(t.userId) ?? '' })
      return out
    },
    { behavior: 'immediate' },
  )
}

/** The snapshot's passkeys give way to the live ones of the users both hold (the rest went with their users). */
async function _carryPasskeys(live: Executor, tx: Executor, keptUserIds: Set<number>): Promise<void> {
  await tx.delete(passkeys)
  const rows = (await live.select().from(passkeys)).filter((p) => keptUserIds.has(p.userId))
  if (rows.length) await tx.insert(passkeys).values(rows)
}
