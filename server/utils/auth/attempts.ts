import { and, eq, gt, lt, min, count } from 'drizzle-orm'
import { apiTokenAttempts, loginAttempts, totpAttempts } from '../../../db/schema'
import { getDb, type Executor } from '../core/db'
import { tooManyRequests } from '../core/errors'

/** Failures within this window count towards a lockout (passwords and TOTP codes alike). */
export const LOGIN_WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_ACCOUNT = 5
export const MAX_FAILURES_PER_SOURCE = 20
/** Attempt rows matter for the 15-minute window; a day is kept for audits, then the sweep drops them. */
export const ATTEMPT_RETENTION_MS = 24 * 3600_000

export async function recordLoginAttempt(exec: Executor, a: { email: string | null; remoteIp: string | null; success: boolean }) {
  await exec.insert(loginAttempts).values({ tsMs: Date.now(), email: a.email, remoteIp: a.remoteIp, success: a.success })
}

export async function recordTotpAttempt(exec: Executor, a: { userId: number; remoteIp: string | null; success: boolean }) {
  await exec.insert(totpAttempts).values({ tsMs: Date.now(), userId: a.userId, remoteIp: a.remoteIp, success: a.success })
}

type _Table = typeof loginAttempts | typeof totpAttempts | typeof apiTokenAttempts

async function _failuresSince(table: _Table, column: any, value: string | number, sinceMs: number) {
  const r = await getDb()
    .select({ n: count(), oldest: min(table.tsMs) })
    .from(table)
    .where(and(eq(column, value), eq(table.success, false), gt(table.tsMs, sinceMs)))
    .get()
  return { n: r?.n ?? 0, oldestMs: r?.oldest ?? Date.now() }
}

async function _assertAllowed(table: _Table, accountColumn: any, account: string | number, remoteIp: string | null, what: string) {
  const now = Date.now()
  const since = now - LOGIN_WINDOW_MS
  const acc = await _failuresSince(table, accountColumn, account, since)
  if (acc.n >= MAX_FAILURES_PER_ACCOUNT)
    throw tooManyRequests(
      `too many failed ${what} for this account: wait before trying again`,
      (acc.oldestMs + LOGIN_WINDOW_MS - now) / 1000,
    )
  if (remoteIp) {
    const source = await _failuresSince(table, table.remoteIp, remoteIp, since)
    if (source.n >= MAX_FAILURES_PER_SOURCE)
      throw tooManyRequests(
        `too many failed ${what} from this address: wait before trying again`,
        (source.oldestMs + LOGIN_WINDOW_MS - now) / 1000,
      )
  }
}

/** Throws 429 with Retry-After when the account or the source has failed too often recently. */
export async function assertLoginAllowed(email: string, remoteIp: string | null): Promise<void> {
  await _assertAllowed(loginAttempts, loginAttempts.email, email, remoteIp, 'logins')
}

/** The same throttle for TOTP codes (login second step, enable, disable). */
export async function assertTotpAllowed(userId: number, remoteIp: string | null): Promise<void> {
  await _assertAllowed(totpAttempts, totpAttempts.userId, userId, remoteIp, 'TOTP codes')
}

/** A bearer token that was unknown, expired or revoked counts like a wrong password. */
export async function recordApiTokenFailure(exec: Executor, remoteIp: string | null) {
  await exec.insert(apiTokenAttempts).values({ tsMs: Date.now(), remoteIp, success: false })
}

/**
 * Bad bearer tokens are throttled per source like passwords (20 within 15 minutes:
 * 429 with Retry-After). There is no account to count against: an unknown token names nobody.
 */
export async function assertApiTokenAllowed(remoteIp: string | null): Promise<void> {
  if (!remoteIp) return
  const now = Date.now()
  const source = await _failuresSince(apiTokenAttempts, apiTokenAttempts.remoteIp, remoteIp, now - LOGIN_WINDOW_MS)
  if (source.n >= MAX_FAILURES_PER_SOURCE)
    throw tooManyRequests(
      'too many invalid API tokens from this address: wait before trying again',
      (source.oldestMs + LOGIN_WINDOW_MS - now) / 1000,
    )
}

/** Retention: login, TOTP and API-token attempt rows older than the cutoff are dropped by the sweeps. */
export async function deleteAttemptsOlderThan(
  exec: Executor,
  cutoffMs: number,
): Promise<{ login: number; totp: number; api_token: number }> {
  const login = await exec.delete(loginAttempts).where(lt(loginAttempts.tsMs, cutoffMs))
  const totp = await exec.delete(totpAttempts).where(lt(totpAttempts.tsMs, cutoffMs))
  const apiToken = await exec.delete(apiTokenAttempts).where(lt(apiTokenAttempts.tsMs, cutoffMs))
  return { login: login.rowsAffected, totp: totp.rowsAffected, api_token: apiToken.rowsAffected }
}
