import { and, eq, gt, lt, min, count } from 'drizzle-orm'
import { loginAttempts } from '../../../db/schema'
import { getDb, type Executor } from '../core/db'
import { tooManyRequests } from '../core/errors'

/** Failures within this window count towards a lockout. */
export const LOGIN_WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_ACCOUNT = 5
export const MAX_FAILURES_PER_SOURCE = 20

export async function recordLoginAttempt(exec: Executor, a: { email: string | null; remoteIp: string | null; success: boolean }) {
  await exec.insert(loginAttempts).values({ tsMs: Date.now(), email: a.email, remoteIp: a.remoteIp, success: a.success })
}

async function _failuresSince(column: typeof loginAttempts.email | typeof loginAttempts.remoteIp, value: string, sinceMs: number) {
  const r = await getDb().select({ n: count(), oldest: min(loginAttempts.tsMs) }).from(loginAttempts)
    .where(and(eq(column, value), eq(loginAttempts.success, false), gt(loginAttempts.tsMs, sinceMs))).get()
  return { n: r?.n ?? 0, oldestMs: r?.oldest ?? Date.now() }
}

/** Throws 429 with Retry-After when the account or the source has failed too often recently. */
export async function assertLoginAllowed(email: string, remoteIp: string | null): Promise<void> {
  const now = Date.now()
  const since = now - LOGIN_WINDOW_MS
  const account = await _failuresSince(loginAttempts.email, email, since)
  if (account.n >= MAX_FAILURES_PER_ACCOUNT)
    throw tooManyRequests('too many failed logins for this account: wait before trying again', (account.oldestMs + LOGIN_WINDOW_MS - now) / 1000)
  if (remoteIp) {
    const source = await _failuresSince(loginAttempts.remoteIp, remoteIp, since)
    if (source.n >= MAX_FAILURES_PER_SOURCE)
      throw tooManyRequests('too many failed logins from this address: wait before trying again', (source.oldestMs + LOGIN_WINDOW_MS - now) / 1000)
  }
}

/** Retention: attempt rows older than 24 h are dropped by the sweep. */
export async function deleteLoginAttemptsOlderThan(exec: Executor, cutoffMs: number): Promise<void> {
  await exec.delete(loginAttempts).where(lt(loginAttempts.tsMs, cutoffMs))
}
