import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { and, eq, isNull } from 'drizzle-orm'
import { createTOTPKeyURI, generateHOTP } from '@oslojs/otp'
import { decodeBase32IgnorePadding, encodeBase32LowerCaseNoPadding, encodeBase32NoPadding } from '@oslojs/encoding'
import { totpRecoveryCodes, users } from '../../../db/schema'
import { writeTransaction, type Tx } from '../core/db'
import { badRequest, conflict, notFound, unauthorized } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import type { AuditAction } from '../core/audit-actions'
import { getSecretsBox } from '../core/secrets'
import { nowMs } from '../core/clock'
import { assertTotpAllowed, recordTotpAttempt } from './attempts'
import { createPendingStore } from './pending-store'
import { createSession, deleteSessionsOfUser, presentSessionUser, type SessionUser } from './sessions'
import { TOTP_PENDING_LIFETIME_MS } from './cookie'

// TOTP (RFC 6238: SHA-1, 30-second steps, 6 digits) as the second factor of
// password logins. A code is accepted within one step either side of the
// panel's clock, and only once: the step it belongs to must be newer than the
// last accepted one. Recovery codes (single use, only their hash stored)
// stand in for a lost device at login and for disabling TOTP.

export const TOTP_PERIOD_SECONDS = 30
export const TOTP_DIGITS = 6
export const RECOVERY_CODE_COUNT = 10
const _ISSUER = 'Edge panel'

const _secretOwner = (userId: number) => `users/${userId}/totp_secret`

export function totpStepAt(ms: number): number {
  return Math.floor(ms / (TOTP_PERIOD_SECONDS * 1000))
}

/**
 * The step in [current - 1, current + 1] whose code equals `code` and that is
 * newer than `lastStep`, else null. Every candidate is compared in constant time.
 */
export function matchTotpStep(key: Uint8Array, code: string, atMs: number, lastStep: number): number | null {
  if (!/^\d{6}$/.test(code)) return null
  const given = Buffer.from(code)
  const current = totpStepAt(atMs)
  let matched: number | null = null
  for (const step of [current - 1, current, current + 1]) {
    const equal = timingSafeEqual(Buffer.from(generateHOTP(key, BigInt(step), TOTP_DIGITS)), given)
    if (equal && step > lastStep && matched === null) matched = step
  }
  return matched
}

/** Ten codes of 16 base32 characters (80 random bits each), shown as xxxx-xxxx-xxxx-xxxx. */
export function generateRecoveryCodes(count = RECOVERY_CODE_COUNT): string[] {
  return Array.from({ length: count }, () => encodeBase32LowerCaseNoPadding(randomBytes(10)).match(/.{4}/g)!.join('-'))
}

/** Bound to the user: the same code of another account hashes differently. 80 bits need no slow hash. */
export function hashRecoveryCode(userId: number, code: string): string {
  return createHash('sha256')
    .update(`${userId}:${code.toLowerCase().replace(/[\s-]/g, '')}`)
    .digest('hex')
}

/** Password logins waiting for their TOTP code: the pending cookie's token -> user. */
export const totpPendingLogins = createPendingStore<{ userId: number }>({ prefix: 'auth:totp-pending', ttlMs: TOTP_PENDING_LIFETIME_MS })

export async function startTotpPendingLogin(userId: number): Promise<string> {
  const token = randomBytes(32).toString('base64url')
  await totpPendingLogins.put(token, { userId })
  return token
}

type UserRow = typeof users.$inferSelect

async function _userRow(tx: Tx, userId: number): Promise<UserRow> {
  const row = await tx.select().from(users).where(eq(users.id, userId)).get()
  if (!row) throw notFound('user', userId)
  return row
}

async function _replaceRecoveryCodes(tx: Tx, userId: number): Promise<string[]> {
  const codes = generateRecoveryCodes()
  await tx.delete(totpRecoveryCodes).where(eq(totpRecoveryCodes.userId, userId))
  const now = Date.now()
  await tx.insert(totpRecoveryCodes).values(codes.map((c) => ({ userId, codeHash: hashRecoveryCode(userId, c), createdAtMs: now })))
  return codes
}

/** Checks a TOTP code (or, when allowed, a recovery code) and consumes it. */
async function _consumeSecondFactor(tx: Tx, row: UserRow, code: string, allowRecovery: boolean): Promise<'totp' | 'recovery_code' | null> {
  const input = code.trim()
  if (/^\d{6}$/.test(input)) {
    if (!row.totpSecret) return null
    const key = decodeBase32IgnorePadding(getSecretsBox().open(row.totpSecret, _secretOwner(row.id)))
    const step = matchTotpStep(key, input, nowMs(), row.totpLastStep)
    if (step === null) return null
    // Conditional, so that two requests with the same code cannot both pass.
    const r = await tx
      .update(users)
      .set({ totpLastStep: step })
      .where(and(eq(users.id, row.id), eq(users.totpLastStep, row.totpLastStep)))
    return r.rowsAffected === 1 ? 'totp' : null
  }
  if (!allowRecovery || input.length > 64) return null
  const r = await tx
    .update(totpRecoveryCodes)
    .set({ usedAtMs: Date.now() })
    .where(
      and(
        eq(totpRecoveryCodes.userId, row.id),
        eq(totpRecoveryCodes.codeHash, hashRecoveryCode(row.id, input)),
        isNull(totpRecoveryCodes.usedAtMs),
      ),
    )
  return r.rowsAffected === 1 ? 'recovery_code' : null
}

type _Outcome<R> = { ok: true; value: R } | { ok: false }

/**
 * The shared frame of every code check: throttle first, then in one write
 * transaction check the precondition, consume the code, record the attempt and
 * audit. A wrong code commits its attempt and audit row, then throws `onFailure`.
 */
async function _withCode<R>(opts: {
  userId: number
  code: string
  ctx: AuditContext
  allowRecovery: boolean
  failureAction: AuditAction
  precondition: (row: UserRow) => void
  onSuccess: (tx: Tx, row: UserRow, kind: 'totp' | 'recovery_code') => Promise<R>
  onFailure: () => Error
}): Promise<R> {
  const remoteIp = opts.ctx.remoteIp ?? null
  await assertTotpAllowed(opts.userId, remoteIp)
  const outcome = await writeTransaction(async (tx): Promise<_Outcome<R>> => {
    const row = await _userRow(tx, opts.userId)
    opts.precondition(row)
    const kind = await _consumeSecondFactor(tx, row, opts.code, opts.allowRecovery)
    if (!kind) {
      await recordTotpAttempt(tx, { userId: row.id, remoteIp, success: false })
      await writeAudit({ ...opts.ctx, actor: row.email }, opts.failureAction, { user_id: row.id }, tx)
      return { ok: false }
    }
    await recordTotpAttempt(tx, { userId: row.id, remoteIp, success: true })
    return { ok: true, value: await opts.onSuccess(tx, row, kind) }
  })
  if (!outcome.ok) throw opts.onFailure()
  return outcome.value
}

const _wrongCode = () => badRequest('code: does not match; enter the current code from the authenticator app (check the device clock)')

/** Step 1 of enrolment: a new secret, sealed at rest, not active until enabled with a code. */
export async function beginTotpSetup(userId: number, ctx: AuditContext): Promise<{ secret: string; otpauth_uri: string }> {
  return writeTransaction(async (tx) => {
    const row = await _userRow(tx, userId)
    if (row.provider !== 'local') throw conflict('TOTP protects password logins; this account logs in through single sign-on')
    if (row.totpEnabled) throw conflict('TOTP is already enabled: disable it first to enrol another device')
    const key = new Uint8Array(randomBytes(20))
    const secret = encodeBase32NoPadding(key)
    await tx
      .update(users)
      .set({ totpSecret: getSecretsBox().seal(secret, _secretOwner(userId)), totpLastStep: 0, updatedAt: new Date().toISOString() })
      .where(eq(users.id, userId))
    await writeAudit(ctx, 'totp_setup', { user_id: userId }, tx)
    return { secret, otpauth_uri: createTOTPKeyURI(_ISSUER, row.email, key, TOTP_PERIOD_SECONDS, TOTP_DIGITS) }
  })
}

export interface TotpChange {
  recovery_codes?: string[]
  session: { token: string; expiresAtMs: number }
}

/** Step 2: a valid code turns TOTP on, issues recovery codes and rotates the user's sessions. */
export async function enableTotp(userId: number, code: string, ctx: AuditContext): Promise<TotpChange> {
  return _withCode({
    userId,
    code,
    ctx,
    allowRecovery: false,
    failureAction: 'totp_enable_failed',
    precondition: (row) => {
      if (row.totpEnabled) throw conflict('TOTP is already enabled')
      if (!row.totpSecret) throw conflict('no TOTP secret yet: call POST /api/auth/totp/setup first')
    },
    onSuccess: async (tx, row) => {
      await tx.update(users).set({ totpEnabled: true, updatedAt: new Date().toISOString() }).where(eq(users.id, row.id))
      const recovery_codes = await _replaceRecoveryCodes(tx, row.id)
      await deleteSessionsOfUser(tx, row.id)
      const session = await createSession(tx, row.id, ctx)
      await writeAudit(ctx, 'totp_enable', { user_id: row.id, recovery_codes: recovery_codes.length }, tx)
      return { recovery_codes, session }
    },
    onFailure: _wrongCode,
  })
}

/** A TOTP code or an unused recovery code turns TOTP off; the user's sessions rotate. */
export async function disableTotp(userId: number, code: string, ctx: AuditContext): Promise<TotpChange> {
  return _withCode({
    userId,
    code,
    ctx,
    allowRecovery: true,
    failureAction: 'totp_disable_failed',
    precondition: (row) => {
      if (!row.totpEnabled) throw conflict('TOTP is not enabled')
    },
    onSuccess: async (tx, row, kind) => {
      await tx
        .update(users)
        .set({ totpEnabled: false, totpSecret: null, totpLastStep: 0, updatedAt: new Date().toISOString() })
        .where(eq(users.id, row.id))
      await tx.delete(totpRecoveryCodes).where(eq(totpRecoveryCodes.userId, row.id))
      await deleteSessionsOfUser(tx, row.id)
      const session = await createSession(tx, row.id, ctx)
      await writeAudit(ctx, 'totp_disable', { user_id: row.id, with: kind }, tx)
      return { session }
    },
    onFailure: _wrongCode,
  })
}

/** A fresh set of recovery codes (the old ones stop working); needs a code from the device. */
export async function regenerateRecoveryCodes(userId: number, code: string, ctx: AuditContext): Promise<string[]> {
  return _withCode({
    userId,
    code,
    ctx,
    allowRecovery: false,
    failureAction: 'totp_recovery_codes_failed',
    precondition: (row) => {
      if (!row.totpEnabled) throw conflict('TOTP is not enabled')
    },
    onSuccess: async (tx, row) => {
      const codes = await _replaceRecoveryCodes(tx, row.id)
      await writeAudit(ctx, 'totp_recovery_codes_regenerate', { user_id: row.id, recovery_codes: codes.length }, tx)
      return codes
    },
    onFailure: _wrongCode,
  })
}

const _pendingGone = () => unauthorized('the TOTP step has expired or was already used: log in with your password again')

/** Second step of a password login: the pending cookie's token plus a TOTP or recovery code. */
export async function completeTotpLogin(
  pendingToken: string | undefined,
  code: string,
  ctx: AuditContext,
): Promise<{ user: SessionUser; token: string; expiresAtMs: number }> {
  const pending = pendingToken ? await totpPendingLogins.peek(pendingToken) : null
  if (!pending) throw _pendingGone()
  return _withCode({
    userId: pending.userId,
    code,
    ctx,
    allowRecovery: true,
    failureAction: 'login_totp_failed',
    precondition: (row) => {
      if (!row.totpEnabled) throw _pendingGone()
    },
    onSuccess: async (tx, row, kind) => {
      // Single use: a second request racing with the same pending cookie gets nothing.
      if (!(await totpPendingLogins.take(pendingToken!))) throw _pendingGone()
      const session = await createSession(tx, row.id, ctx)
      await writeAudit({ ...ctx, actor: row.email }, 'login', { user_id: row.id, provider: 'local', second_factor: kind }, tx)
      return { user: presentSessionUser(row), ...session }
    },
    onFailure: () => unauthorized('invalid code: enter the current code from the authenticator app, or a recovery code'),
  })
}
