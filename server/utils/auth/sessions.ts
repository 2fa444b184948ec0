import { hash, randomBytes } from 'node:crypto'
import { and, eq, inArray, lte, ne, notInArray, or } from 'drizzle-orm'
import { forwardAuthCodes, forwardAuthCredentials, sessions, users } from '../../../db/schema'
import { getDb, runWrite, type Executor } from '../core/db'
import { kvPeekFresh, kvRemove, kvSetWithTtl } from '../core/kv'

// The name alone, in a module of its own: the proxy configuration builder strips it and imports nothing else of auth.
export { SESSION_COOKIE } from './session-cookie'
export const SESSION_LIFETIME_MS = 30 * 24 * 3600 * 1000
export const SESSION_CACHE_TTL_MS = 30_000
export const LAST_SEEN_THROTTLE_MS = 5 * 60_000

export interface SessionUser {
  id: number
  email: string
  name: string
  role: 'admin' | 'viewer'
  provider: string
  totp_enabled: boolean
}
export interface ResolvedSession {
  user: SessionUser
  sessionId: number
  expiresAtMs: number
  /**
   * The user's groups, panel-local and OIDC (deduplicated), read with the session: what a host's
   * auth_allowed_groups is matched against at /auth/forward (server/utils/auth/host-identity.ts).
   * Absent where no host check reads it (API tokens).
   */
  groups?: readonly string[]
  /** Present when an API token authenticated the request (server/utils/auth/api-tokens.ts). */
  apiToken?: { id: number; name: string; scope: 'read' | 'admin' }
}

/**
 * Tokens are stored only as their SHA-256, so a database copy cannot be replayed as cookies.
 * One-shot crypto.hash: every ForwardAuth check hashes its cookie, and createHash's object costs three times as much.
 */
export function hashSessionToken(token: string): string {
  return hash('sha256', token, 'hex')
}

const _cacheKey = (tokenHash: string) => `session:${tokenHash}`

export function presentSessionUser(row: typeof users.$inferSelect): SessionUser {
  return { id: row.id, email: row.email, name: row.name, role: row.role, provider: row.provider, totp_enabled: row.totpEnabled }
}

/** A user's groups as ForwardAuth matches and sends them: the panel-local ones, then the OIDC ones not already listed. */
export function groupsOfUser(row: Pick<typeof users.$inferSelect, 'groups' | 'oidcGroups'>): readonly string[] {
  return [...new Set([...(row.groups ?? []), ...(row.oidcGroups ?? [])])]
}

export async function createSession(
  exec: Executor,
  userId: number,
  client: { remoteIp?: string | null; userAgent?: string | null },
): Promise<{ token: string; expiresAtMs: number }> {
  const token = randomBytes(32).toString('base64url')
  const now = Date.now()
  const expiresAtMs = now + SESSION_LIFETIME_MS
  await exec.insert(sessions).values({
    tokenHash: hashSessionToken(token),
    userId,
    createdAtMs: now,
    expiresAtMs,
    lastSeenAtMs: now,
    remoteIp: client.remoteIp ?? null,
    userAgent: client.userAgent?.slice(0, 512) ?? null,
  })
  return { token, expiresAtMs }
}

function _cachedSession(cacheKey: string): ResolvedSession | null | undefined {
  const cached = kvPeekFresh<ResolvedSession | null>(cacheKey)
  if (cached && cached.expiresAtMs <= Date.now()) return null
  return cached
}

/**
 * resolveSession's answer when the session cache holds it, without a promise
 * (ForwardAuth's fast path); undefined when the database must be asked.
 */
export function resolveCachedSession(token: string | undefined): ResolvedSession | null | undefined {
  if (!token || token.length > 128) return null
  return _cachedSession(_recentCacheKey(token))
}

// The proxy asks about the same few cookies thousands of times a second, and hashing one took
// two thirds of a cached lookup in a profile under that load; the key kept is one string, so
// the cache's lookup reuses its hash too. The tokens live in this process's memory anyway (each request carries
// one); the database and the session cache still hold only hashes. Bounded: a flood of
// made-up cookies empties it, it never grows past the cap.
const _CACHE_KEY_MEMO_CAP = 4096

/** A bounded memo from a token to its cache key (`cacheKeyOfHash` of its hash), for sessions and ForwardAuth credentials alike. */
export function memoizedTokenCacheKey(cacheKeyOfHash: (tokenHash: string) => string): (token: string) => string {
  const cacheKeyOfToken = new Map<string, string>()
  return (token) => {
    let cacheKey = cacheKeyOfToken.get(token)
    if (cacheKey === undefined) {
      if (cacheKeyOfToken.size >= _CACHE_KEY_MEMO_CAP) cacheKeyOfToken.clear()
      cacheKey = cacheKeyOfHash(hashSessionToken(token))
      cacheKeyOfToken.set(token, cacheKey)
    }
    return cacheKey
  }
}
const _recentCacheKey = memoizedTokenCacheKey((tokenHash) => _cacheKey(tokenHash))

/**
 * A session row found live: last_seen is written (sliding the expiry) only when the stored value
 * is older than 5 minutes, as the spec says. Answers the expiry the session now has.
 */
export async function slideSessionExpiry(session: { id: number; expiresAtMs: number; lastSeenAtMs: number }, now: number): Promise<number> {
  if (now - session.lastSeenAtMs <= LAST_SEEN_THROTTLE_MS) return session.expiresAtMs
  const expiresAtMs = now + SESSION_LIFETIME_MS
  await runWrite(() => getDb().update(sessions).set({ lastSeenAtMs: now, expiresAtMs }).where(eq(sessions.id, session.id)))
  return expiresAtMs
}

/**
 * Token -> session and user. Answers from a 30 s cache when it can; on a miss
 * reads the database and writes last_seen (sliding the expiry) only when the
 * stored value is older than 5 minutes.
 */
export async function resolveSession(token: string | undefined): Promise<ResolvedSession | null> {
  if (!token || token.length > 128) return null
  const tokenHash = hashSessionToken(token)
  const cached = _cachedSession(_cacheKey(tokenHash))
  if (cached !== undefined) return cached
  const row = await getDb()
    .select({ s: sessions, u: users })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .where(eq(sessions.tokenHash, tokenHash))
    .get()
  const now = Date.now()
  let resolved: ResolvedSession | null = null
  if (row && row.s.expiresAtMs > now)
    resolved = {
      user: presentSessionUser(row.u),
      groups: groupsOfUser(row.u),
      sessionId: row.s.id,
      expiresAtMs: await slideSessionExpiry(row.s, now),
    }
  await kvSetWithTtl(_cacheKey(tokenHash), resolved, SESSION_CACHE_TTL_MS)
  return resolved
}

export async function deleteSessionByToken(exec: Executor, token: string): Promise<void> {
  const tokenHash = hashSessionToken(token)
  // Before the session's row goes: where the database enforces the references, its credentials go with it.
  const ending = await exec.select({ id: sessions.id }).from(sessions).where(eq(sessions.tokenHash, tokenHash))
  await _endForwardAuthOfSessions(
    exec,
    ending.map((r) => r.id),
  )
  await exec.delete(sessions).where(eq(sessions.tokenHash, tokenHash))
  await kvRemove(_cacheKey(tokenHash))
}

/** The cache key of a ForwardAuth credential of strict session mode (forward-credentials.ts): kept here, where sessions end. */
export const forwardCredentialCacheKey = (tokenHash: string) => `fa:${tokenHash}`

/**
 * Strict session mode: a session's ForwardAuth credentials and codes end with it, in the
 * database (by hand too: the references cascade only where the connection enforces them) and in the cache, so that a logout or a
 * password change closes the protected hosts at once too.
 */
async function _endForwardAuthOfSessions(exec: Executor, sessionIds: number[], keepRows = false): Promise<void> {
  if (!sessionIds.length) return
  const creds = await exec
    .select({ tokenHash: forwardAuthCredentials.tokenHash })
    .from(forwardAuthCredentials)
    .where(inArray(forwardAuthCredentials.sessionId, sessionIds))
  await Promise.all(creds.map((r) => kvRemove(forwardCredentialCacheKey(r.tokenHash))))
  if (keepRows) return
  await exec.delete(forwardAuthCredentials).where(inArray(forwardAuthCredentials.sessionId, sessionIds))
  await exec.delete(forwardAuthCodes).where(inArray(forwardAuthCodes.sessionId, sessionIds))
}

/** Drops the cached answers for a user's sessions (after a delete or a role change). */
export async function forgetCachedSessionsOfUser(exec: Executor, userId: number): Promise<void> {
  const rows = await exec.select({ id: sessions.id, tokenHash: sessions.tokenHash }).from(sessions).where(eq(sessions.userId, userId))
  await Promise.all(rows.map((r) => kvRemove(_cacheKey(r.tokenHash))))
  // ForwardAuth's answers carry the name and email too.
  await _endForwardAuthOfSessions(
    exec,
    rows.map((r) => r.id),
    true,
  )
}

/** A switch of strict session mode (strict-mode.ts): every session ends, with its ForwardAuth credentials. */
export async function deleteAllSessions(exec: Executor): Promise<number> {
  const rows = await exec.select({ id: sessions.id, tokenHash: sessions.tokenHash }).from(sessions)
  await Promise.all(rows.map((r) => kvRemove(_cacheKey(r.tokenHash))))
  await _endForwardAuthOfSessions(
    exec,
    rows.map((r) => r.id),
  )
  await exec.delete(forwardAuthCredentials)
  await exec.delete(forwardAuthCodes)
  await exec.delete(sessions)
  return rows.length
}

/**
 * Privilege change (role, password, TOTP): every session of the user ends, in
 * the database and in the cache, except `keepSessionId` when given.
 */
export async function deleteSessionsOfUser(exec: Executor, userId: number, keepSessionId?: number): Promise<number> {
  const where = keepSessionId === undefined ? eq(sessions.userId, userId) : and(eq(sessions.userId, userId), ne(sessions.id, keepSessionId))
  const rows = await exec.select({ id: sessions.id, tokenHash: sessions.tokenHash }).from(sessions).where(where)
  await Promise.all(rows.map((r) => kvRemove(_cacheKey(r.tokenHash))))
  await _endForwardAuthOfSessions(
    exec,
    rows.map((r) => r.id),
  )
  await exec.delete(sessions).where(where)
  return rows.length
}

/** The sweep: sessions past their expiry are deleted (their cache entries expire on their own). */
export async function deleteExpiredSessions(exec: Executor, nowMs = Date.now()): Promise<number> {
  const r = await exec.delete(sessions).where(lte(sessions.expiresAtMs, nowMs))
  // Strict mode's rows of sessions gone (expired, or a deleted user's), and codes past their minute.
  const live = exec.select({ id: sessions.id }).from(sessions)
  await exec.delete(forwardAuthCredentials).where(notInArray(forwardAuthCredentials.sessionId, live))
  await exec.delete(forwardAuthCodes).where(or(notInArray(forwardAuthCodes.sessionId, live), lte(forwardAuthCodes.expiresAtMs, nowMs)))
  return r.rowsAffected
}
