import { and, count, eq, ne } from 'drizzle-orm'
import { users } from '../../../db/schema'
import { getDb, writeTransaction, type Executor } from '../core/db'
import { conflict, isUniqueViolation, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { hashPassword } from './passwords'
import { createSession, deleteSessionsOfUser, forgetCachedSessionsOfUser } from './sessions'
import { deletePasskeysOfUser } from './passkeys'
import { narrowApiTokensOfUser, revokeApiTokensOfUser } from './api-tokens'

export type Role = 'admin' | 'viewer'
export type UserRow = typeof users.$inferSelect

export function presentUser(row: UserRow) {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    provider: row.provider,
    totp_enabled: row.totpEnabled,
    groups: row.groups,
    // Read-only here: written from the OIDC group claim at each OIDC login.
    oidc_groups: row.oidcGroups,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

export async function countUsers(exec: Executor = getDb()): Promise<number> {
  return (await exec.select({ n: count() }).from(users).get())?.n ?? 0
}

export async function findUserByEmail(email: string): Promise<UserRow | undefined> {
  return getDb().select().from(users).where(eq(users.email, email)).get()
}

export async function listUsers() {
  return (await getDb().select().from(users).orderBy(users.id)).map(presentUser)
}

/**
 * Every group name in use, panel-local and OIDC, sorted, each with where it comes from: what the
 * host form offers for auth_allowed_groups (GET /api/users/groups).
 */
export async function listUserGroups(): Promise<{ name: string; local_users: number; oidc_users: number }[]> {
  const byName = new Map<string, { name: string; local_users: number; oidc_users: number }>()
  const entry = (name: string) => {
    let e = byName.get(name)
    if (!e) byName.set(name, (e = { name, local_users: 0, oidc_users: 0 }))
    return e
  }
  for (const row of await getDb().select({ groups: users.groups, oidcGroups: users.oidcGroups }).from(users)) {
    for (const g of new Set(row.groups)) entry(g).local_users++
    for (const g of new Set(row.oidcGroups)) entry(g).oidc_users++
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

export async function getUser(id: number) {
  const row = await getDb().select().from(users).where(eq(users.id, id)).get()
  if (!row) throw notFound('user', id)
  return presentUser(row)
}

export interface NewUser {
  email: string
  password: string
  name?: string
  role: Role
  groups?: string[]
}

/** Inserts a local user; a duplicate email is a 409. Runs inside the caller's transaction. */
export async function insertUser(tx: Executor, input: NewUser): Promise<UserRow> {
  const now = new Date().toISOString()
  try {
    return await tx
      .insert(users)
      .values({
        email: input.email,
        name: input.name ?? '',
        role: input.role,
        groups: input.groups ?? [],
        passwordHash: await hashPassword(input.password),
        provider: 'local',
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get()
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`email: a user with ${input.email} already exists`)
    throw err
  }
}

export async function createUser(input: NewUser, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const row = await insertUser(tx, input)
    await writeAudit(ctx, 'user_create', { user_id: row.id, email: row.email, role: row.role, groups: row.groups }, tx)
    return presentUser(row)
  })
}

/** How many admins there are besides the user `excludingId` (the last admin is never demoted or deleted). */
export async function otherAdminCount(tx: Executor, excludingId: number): Promise<number> {
  return (
    (
      await tx
        .select({ n: count() })
        .from(users)
        .where(and(eq(users.role, 'admin'), ne(users.id, excludingId)))
        .get()
    )?.n ?? 0
  )
}

export interface UserUpdate {
  email: string
  name: string
  role: Role
  password?: string
  /** Left out: the stored groups stay. */
  groups?: string[]
}

/**
 * A role or password change is a privilege change: every session of that user
 * ends, and a password change also revokes every API token of that user.
 * When the user changed themselves (`actorUserId`), they get a new session in
 * `session` so that they stay logged in with a fresh token.
 */
export async function updateUser(id: number, input: UserUpdate, ctx: AuditContext, actorUserId?: number) {
  return writeTransaction(async (tx) => {
    const row = await tx.select().from(users).where(eq(users.id, id)).get()
    if (!row) throw notFound('user', id)
    if (row.role === 'admin' && input.role !== 'admin' && (await otherAdminCount(tx, id)) === 0)
      throw conflict('role: this is the last admin; make another user admin first')
    const set: Partial<UserRow> = { email: input.email, name: input.name, role: input.role, updatedAt: new Date().toISOString() }
    if (input.password !== undefined) set.passwordHash = await hashPassword(input.password)
    if (input.groups !== undefined) set.groups = input.groups
    let updated: UserRow
    try {
      updated = (await tx.update(users).set(set).where(eq(users.id, id)).returning().get())!
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`email: a user with ${input.email} already exists`)
      throw err
    }
    const privilegeChanged = row.role !== input.role || input.password !== undefined
    let session: { token: string; expiresAtMs: number } | undefined
    if (privilegeChanged) {
      await deleteSessionsOfUser(tx, id)
      if (actorUserId === id) session = await createSession(tx, id, ctx)
    } else {
      // Also what makes a group change count at the user's next ForwardAuth check: the cached
      // session carries the groups a host's auth_allowed_groups is matched against.
      await forgetCachedSessionsOfUser(tx, id)
    }
    // A new password is the answer to a compromise: the tokens made with the old one end with it
    // (issue 33), or an intruder's token would outlive the reset. A demoted user's admin tokens
    // narrow to read at once (issue 17).
    const tokensRevoked = input.password !== undefined ? await revokeApiTokensOfUser(tx, id, ctx.actor) : 0
    const tokensNarrowed = row.role === 'admin' && input.role !== 'admin' ? await narrowApiTokensOfUser(tx, id) : 0
    await writeAudit(
      ctx,
      'user_update',
      {
        user_id: id,
        email: updated.email,
        role: updated.role,
        ...(input.groups !== undefined && _sameGroups(row.groups, updated.groups) === false
          ? { groups_before: row.groups, groups: updated.groups }
          : {}),
        password_changed: input.password !== undefined,
        sessions_ended: privilegeChanged,
        ...(input.password !== undefined ? { api_tokens_revoked: tokensRevoked } : {}),
        ...(tokensNarrowed ? { api_tokens_narrowed: tokensNarrowed } : {}),
      },
      tx,
    )
    return { user: presentUser(updated), session }
  })
}

export async function deleteUser(id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const row = await tx.select().from(users).where(eq(users.id, id)).get()
    if (!row) throw notFound('user', id)
    if (row.role === 'admin' && (await otherAdminCount(tx, id)) === 0)
      throw conflict('this is the last admin and cannot be deleted; make another user admin first')
    await forgetCachedSessionsOfUser(tx, id)
    // Foreign keys are off in SQLite here, so the cascade is done by hand (issue 17).
    const tokensRevoked = await revokeApiTokensOfUser(tx, id, ctx.actor)
    await deletePasskeysOfUser(tx, id)
    await tx.delete(users).where(eq(users.id, id))
    await writeAudit(ctx, 'user_delete', { user_id: id, email: row.email, api_tokens_revoked: tokensRevoked }, tx)
  })
}

function _sameGroups(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((g, i) => g === b[i])
}
