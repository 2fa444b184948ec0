import { and, eq, gt, isNull, lt, max, min, count } from 'drizzle-orm'
import { apiTokenAttempts, loginAttempts, totpAttempts } from '../../../db/schema'
import { getDb, runWrite, writeTransaction, type Executor } from '../core/db'
import { nowMs } from '../core/clock'
import { tooManyRequests } from '../core/errors'

/** Failures within this window count towards a lockout (TOTP codes, API tokens) and the per-source password backoff. */
export const LOGIN_WINDOW_MS = 15 * 60_000
export const MAX_FAILURES_PER_ACCOUNT = 5
export const MAX_FAILURES_PER_SOURCE = 20
/** Attempt rows matter for the 15-minute window; a day is kept for audits, then the sweep drops them. */
export const ATTEMPT_RETENTION_MS = 24 * 3600_000
/** The first wait of a password backoff, doubled by each further failure ... */
export const LOGIN_BACKOFF_BASE_MS = 15_000
/** ... up to this. */
export const MAX_LOGIN_BACKOFF_MS = 15 * 60_000

export async function recordTotpAttempt(exec: Executor, a: { userId: number; remoteIp: string | null; success: boolean }) {
  await exec.insert(totpAttempts).values({ tsMs: Date.now(), userId: a.userId, remoteIp: a.remoteIp, success: a.success })
}

/**
 * How long after its newest failure a counter makes the next attempt wait: nothing below `free`
 * failures, then 15 s, 30 s, 60 s ... doubling with each further failure, never above 15 minutes.
 */
export function loginBackoffMs(failures: number, free: number): number {
  return failures < free ? 0 : Math.min(2 ** Math.min(failures - free, 16) * LOGIN_BACKOFF_BASE_MS, MAX_LOGIN_BACKOFF_MS)
}

/**
 * Password attempts, throttled so that nobody can lock the owner out (issue 33):
 * - per (account, source): 5 failures since that pair's last success (within the
 *   24 h the rows are kept), then each further attempt waits 15 s, 30 s, 60 s ...
 *   up to 15 minutes after the previous failure;
 * - per source, whatever the accounts: 20 failures within 15 minutes, then the
 *   same doubling wait (password spraying from one address).
 * A correct password from a source without failures is never refused because of
 * another source's failures. The check and the attempt's row are one write
 * transaction, before the hash check: the row counts as a failure until the
 * password proves right (settleLoginAttempt), so concurrent attempts see each
 * other and a burst evaluates no more passwords than the limit.
 * Answers the attempt's row id; throws 429 with Retry-After while a wait runs.
 */
export async function beginLoginAttempt(email: string, remoteIp: string | null): Promise<number> {
  return writeTransaction(async (tx) => {
    const now = nowMs()
    const sameSource = remoteIp === null ? isNull(loginAttempts.remoteIp) : eq(loginAttempts.remoteIp, remoteIp)
    const lastSuccess = await tx
      .select({ ts: max(loginAttempts.tsMs) })
      .from(loginAttempts)
      .where(and(eq(loginAttempts.email, email), sameSource, eq(loginAttempts.success, true)))
      .get()
    const pairSince = Math.max(now - ATTEMPT_RETENTION_MS, lastSuccess?.ts ?? 0)
    const pair = await tx
      .select({ n: count(), newest: max(loginAttempts.tsMs) })
      .from(loginAttempts)
      .where(and(eq(loginAttempts.email, email), sameSource, eq(loginAttempts.success, false), gt(loginAttempts.tsMs, pairSince)))
      .get()
    _assertWaited(pair, MAX_FAILURES_PER_ACCOUNT, now, 'too many failed logins for this account from this address')
    if (remoteIp !== null) {
      const source = await tx
        .select({ n: count(), newest: max(loginAttempts.tsMs) })
        .from(loginAttempts)
        .where(and(eq(loginAttempts.remoteIp, remoteIp), eq(loginAttempts.success, false), gt(loginAttempts.tsMs, now - LOGIN_WINDOW_MS)))
        .get()
      _assertWaited(source, MAX_FAILURES_PER_SOURCE, now, 'too many failed logins from this address')
    }
    const row = await tx
      .insert(loginAttempts)
      .values({ tsMs: now, email, remoteIp, success: false })
      .returning({ id: loginAttempts.id })
      .get()
    return row!.id
  })
}

function _assertWaited(counter: { n: number; newest: number | null } | undefined, free: number, now: number, what: string) {
  const wait = loginBackoffMs(counter?.n ?? 0, free)
  const until = (counter?.newest ?? now) + wait
  if (wait > 0 && until > now)
    throw tooManyRequests(
      `${what}: wait ${Math.ceil((until - now) / 1000)} s before the next attempt (each further failure doubles the wait, up to 15 minutes)`,
      (until - now) / 1000,
    )
}

/** The password proved right: the attempt's row stops counting as a failure (inside the login's transaction). */
export async function settleLoginAttempt(exec: Executor, attemptId: number): Promise<void> {
  await exec.update(loginAttempts).set({ success: true }).where(eq(loginAttempts.id, attemptId))
}

type _Table = typeof totpAttempts | typeof apiTokenAttempts

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

/** The same throttle for TOTP codes (login second step, enable, disable). */
export async function assertTotpAllowed(userId: number, remoteIp: string | null): Promise<void> {
  await _assertAllowed(totpAttempts, totpAttempts.userId, userId, remoteIp, 'TOTP codes')
}

/**
 * A bearer token that was unknown, expired or revoked, from `remoteIp`: recorded, or, once that
 * source has sent 20 invalid tokens within 15 minutes, refused with 429 and Retry-After (not
 * recorded then, so the wait ends when the oldest failure leaves the window). Only invalid tokens
 * get here: a valid token is never throttled. Its 32 random bytes cannot be guessed, so refusing
 * it would protect nothing, and would let one broken script (or anyone, behind a shared address)
 * lock out every other script of that address.
 */
export async function noteInvalidApiToken(remoteIp: string | null): Promise<void> {
  await runWrite(async () => {
    if (remoteIp) {
      const now = Date.now()
      const source = await _failuresSince(apiTokenAttempts, apiTokenAttempts.remoteIp, remoteIp, now - LOGIN_WINDOW_MS)
      if (source.n >= MAX_FAILURES_PER_SOURCE)
        throw tooManyRequests(
          'too many invalid API tokens from this address: wait before trying again (valid tokens keep working)',
          (source.oldestMs + LOGIN_WINDOW_MS - now) / 1000,
        )
    }
    await getDb().insert(apiTokenAttempts).values({ tsMs: Date.now(), remoteIp, success: false })
  })
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
