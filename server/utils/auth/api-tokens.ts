import { createHash, randomBytes } from 'node:crypto'
import { getQuery, getRequestHeader, type H3Event } from 'h3'
import { and, desc, eq, isNull } from 'drizzle-orm'
import { apiTokens, users } from '../../../db/schema'
import { getDb, runWrite, writeTransaction, type Executor } from '../core/db'
import { writeAudit, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { conflict, forbidden, notFound, unauthorized } from '../core/errors'
import { noteInvalidApiToken } from './attempts'
import { presentSessionUser, type ResolvedSession } from './sessions'
import type { Role } from './users'

// API tokens for scripts (docs/api-tokens.md): `Authorization: Bearer <secret>`
// on /api/*. Only the secret's SHA-256 is stored; the secret is answered once,
// at creation. A token never grants more than its owner's current role: the
// effective role is computed at every request from the user row, so deleting
// or demoting the user takes effect on the next request (no cache).

export type TokenScope = 'read' | 'admin'
export type ApiTokenRow = typeof apiTokens.$inferSelect

/** Recognisable in logs and by secret scanners; the rest is 32 random bytes. */
export const API_TOKEN_PREFIX = 'ept_'
const _SECRET_PATTERN = /^ept_[A-Za-z0-9_-]{43}$/
/** How many characters of the secret the list shows (the prefix and 6 random characters). */
const _SHOWN_CHARS = API_TOKEN_PREFIX.length + 6
/** last_used is written at most this often per token (and whenever the address changes). */
export const LAST_USED_WRITE_INTERVAL_MS = 60_000
export const NO_EXPIRY_WARNING = 'this token never expires: revoke it when the script that uses it is retired'

export const hashApiToken = (secret: string) => createHash('sha256').update(secret).digest('hex')

const _iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** The role a token acts with: its scope, never above its owner's role. */
export function effectiveRoleOf(scope: TokenScope, userRole: Role): Role {
  return scope === 'admin' && userRole === 'admin' ? 'admin' : 'viewer'
}

export function tokenStateOf(row: ApiTokenRow, nowMs = Date.now()): 'active' | 'expired' | 'revoked' {
  if (row.revokedAtMs !== null) return 'revoked'
  if (row.expiresAtMs !== null && row.expiresAtMs <= nowMs) return 'expired'
  return 'active'
}

/** Everything about a token except its secret and hash. */
export function presentApiToken(row: ApiTokenRow, owner: { email: string; role: Role }) {
  return {
    id: row.id,
    name: row.name,
    scope: row.scope,
    effective_scope: effectiveRoleOf(row.scope, owner.role) === 'admin' ? ('admin' as const) : ('read' as const),
    prefix: row.prefix,
    user_id: row.userId,
    user_email: owner.email,
    state: tokenStateOf(row),
    created_at: _iso(row.createdAtMs)!,
    expires_at: _iso(row.expiresAtMs),
    last_used_at: _iso(row.lastUsedAtMs),
    last_used_ip: row.lastUsedIp,
    revoked_at: _iso(row.revokedAtMs),
    revoked_by: row.revokedBy,
  }
}

/** Audit details of a token: never its secret, hash or prefix. */
const _auditFields = (row: ApiTokenRow, ownerEmail: string) => ({
  token_id: row.id,
  token_name: row.name,
  scope: row.scope,
  user_id: row.userId,
  user_email: ownerEmail,
})

export async function listApiTokens(filter: { userId?: number }) {
  const rows = await getDb()
    .select({ t: apiTokens, u: users })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(filter.userId === undefined ? undefined : eq(apiTokens.userId, filter.userId))
    .orderBy(desc(apiTokens.id))
  return rows.map((r) => presentApiToken(r.t, r.u))
}

export interface NewApiToken {
  name: string
  scope: TokenScope
  expiresAtMs: number | null
}

/** Creates a token for `owner`; the answer is the only place the secret ever appears. */
export async function createApiToken(owner: { id: number; email: string; role: Role }, input: NewApiToken, ctx: AuditContext) {
  if (input.scope === 'admin' && owner.role !== 'admin')
    throw forbidden('scope: a viewer can create "read" tokens only (a token never exceeds its owner\'s role)')
  const secret = API_TOKEN_PREFIX + randomBytes(32).toString('base64url')
  const row = await writeTransaction(async (tx) => {
    const clash = await tx
      .select({ id: apiTokens.id })
      .from(apiTokens)
      .where(and(eq(apiTokens.userId, owner.id), eq(apiTokens.name, input.name), isNull(apiTokens.revokedAtMs)))
      .get()
    if (clash) throw conflict(`name: you already have a token named "${input.name}"; pick another name or revoke that one`)
    const inserted = (await tx
      .insert(apiTokens)
      .values({
        userId: owner.id,
        name: input.name,
        scope: input.scope,
        tokenHash: hashApiToken(secret),
        prefix: secret.slice(0, _SHOWN_CHARS),
        createdAtMs: Date.now(),
        expiresAtMs: input.expiresAtMs,
      })
      .returning()
      .get())!
    await writeAudit(ctx, 'api_token_create', { ..._auditFields(inserted, owner.email), expires_at: _iso(inserted.expiresAtMs) }, tx)
    return inserted
  })
  return {
    token: presentApiToken(row, owner),
    secret,
    ...(row.expiresAtMs === null ? { warning: NO_EXPIRY_WARNING } : {}),
  }
}

/**
 * Revokes a token. The owner may revoke their own, an admin any; to anyone else
 * the token does not exist (404). Revoking a revoked token changes nothing.
 */
export async function revokeApiToken(id: number, actor: { id: number; role: Role }, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const found = await tx
      .select({ t: apiTokens, u: users })
      .from(apiTokens)
      .innerJoin(users, eq(users.id, apiTokens.userId))
      .where(eq(apiTokens.id, id))
      .get()
    if (!found || (found.t.userId !== actor.id && actor.role !== 'admin')) throw notFound('API token', id)
    if (found.t.revokedAtMs !== null) return
    await tx.update(apiTokens).set({ revokedAtMs: Date.now(), revokedBy: ctx.actor }).where(eq(apiTokens.id, id))
    await writeAudit(ctx, 'api_token_revoke', _auditFields(found.t, found.u.email), tx)
  })
}

/**
 * Hooks for user changes (server/utils/auth/users.ts), inside its transaction:
 * a deleted user's tokens are revoked; a user demoted to viewer keeps read
 * tokens only (admin tokens narrow to read, and stay read if promoted again).
 */
export async function revokeApiTokensOfUser(tx: Executor, userId: number, by: string): Promise<number> {
  const r = await tx
    .update(apiTokens)
    .set({ revokedAtMs: Date.now(), revokedBy: by })
    .where(and(eq(apiTokens.userId, userId), isNull(apiTokens.revokedAtMs)))
  return r.rowsAffected
}

export async function narrowApiTokensOfUser(tx: Executor, userId: number): Promise<number> {
  const r = await tx
    .update(apiTokens)
    .set({ scope: 'read' })
    .where(and(eq(apiTokens.userId, userId), eq(apiTokens.scope, 'admin'), isNull(apiTokens.revokedAtMs)))
  return r.rowsAffected
}

export interface TokenSession extends ResolvedSession {
  apiToken: { id: number; name: string; scope: TokenScope }
}

async function _refuse(remoteIp: string | null, why: string): Promise<never> {
  await noteInvalidApiToken(remoteIp) // 429 instead, once this source has sent too many
  throw unauthorized(why)
}

/**
 * `Authorization: Bearer <secret>` -> the owner acting with the token's
 * effective role. Unknown, revoked and expired tokens are 401 and count
 * towards the per-source throttle (429 once it is reached); a valid token is
 * never throttled, whatever its source sent before (noteInvalidApiToken).
 */
export async function resolveApiToken(secret: string, remoteIp: string | null): Promise<TokenSession> {
  if (!_SECRET_PATTERN.test(secret))
    return _refuse(remoteIp, 'invalid API token: send the whole secret shown at creation as Authorization: Bearer <token>')
  const found = await getDb()
    .select({ t: apiTokens, u: users })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(eq(apiTokens.tokenHash, hashApiToken(secret)))
    .get()
  if (!found) return _refuse(remoteIp, 'invalid API token: it is unknown or its user was deleted; create a new one')
  const now = Date.now()
  const state = tokenStateOf(found.t, now)
  if (state === 'revoked') return _refuse(remoteIp, `API token "${found.t.name}" was revoked: create a new one`)
  if (state === 'expired') return _refuse(remoteIp, `API token "${found.t.name}" expired at ${_iso(found.t.expiresAtMs)}: create a new one`)
  // Not awaited: a read with a token must not wait behind a long push in the write queue.
  if (found.t.lastUsedIp !== remoteIp || now - (found.t.lastUsedAtMs ?? 0) > LAST_USED_WRITE_INTERVAL_MS) {
    void runWrite(() =>
      getDb().update(apiTokens).set({ lastUsedAtMs: now, lastUsedIp: remoteIp }).where(eq(apiTokens.id, found.t.id)),
    ).catch((err) => logger.warn(`API token ${found.t.id}: last use not recorded: ${(err as Error).message}`))
  }
  const user = presentSessionUser(found.u)
  return {
    user: { ...user, role: effectiveRoleOf(found.t.scope, user.role) },
    sessionId: 0,
    // A token without expiry: GET /api/auth/session answers expires_at null.
    expiresAtMs: found.t.expiresAtMs ?? Infinity,
    apiToken: { id: found.t.id, name: found.t.name, scope: found.t.scope },
  }
}

/** The secret of an `Authorization: Bearer` header; undefined without one (other schemes are left alone). */
export function bearerSecretOf(event: H3Event): string | undefined {
  const header = getRequestHeader(event, 'authorization')
  const m = header ? /^Bearer\s+(.*)$/i.exec(header.trim()) : null
  return m ? m[1]!.trim() : undefined
}

const _QUERY_TOKEN_NAMES = new Set(['access_token', 'api_token', 'token', 'bearer', 'api_key', 'apikey'])

/**
 * Tokens travel in the Authorization header only: a query string ends up in
 * proxy logs, browser history and Referer headers. Such a request is refused
 * before anything runs, whatever else it carries.
 */
export function assertNoTokenInQuery(event: H3Event): void {
  for (const [name, value] of Object.entries(getQuery(event))) {
    const values = ([] as unknown[]).concat(value)
    if (_QUERY_TOKEN_NAMES.has(name.toLowerCase()) || values.some((v) => typeof v === 'string' && v.startsWith(API_TOKEN_PREFIX)))
      throw unauthorized(
        `API tokens are not accepted in the query string (parameter "${name}"): send the header Authorization: Bearer <token>`,
      )
  }
}
