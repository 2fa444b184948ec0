import { writeTransaction } from '../core/db'
import { conflict, unauthorized } from '../core/errors'
import { writeAudit, systemActor, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { beginLoginAttempt, settleLoginAttempt } from './attempts'
import { burnPasswordCheck, verifyPassword } from './passwords'
import { createSession, presentSessionUser, type SessionUser } from './sessions'
import { countUsers, findUserByEmail, insertUser, presentUser } from './users'
import { startTotpPendingLogin } from './totp'

export interface LoginResult {
  user: SessionUser
  token: string
  expiresAtMs: number
}
export type PasswordLoginResult = ({ totpPending: false } & LoginResult) | { totpPending: true; pendingToken: string }

/**
 * Email + password -> new session, or a pending login waiting for its TOTP
 * code. Failures are recorded, audited and throttled (attempts.ts: the attempt
 * is recorded, as a failure, before the hash check, so a burst cannot outrun
 * the count). An unknown email, or an account without a password (single
 * sign-on), still runs one hash check: the answer takes as long as for a wrong
 * password.
 */
export async function loginWithPassword(email: string, password: string, ctx: AuditContext): Promise<PasswordLoginResult> {
  const attemptId = await beginLoginAttempt(email, ctx.remoteIp ?? null)
  const row = await findUserByEmail(email)
  // An unknown email costs the same hash work as a known one, so the timing tells nothing.
  if (!row?.passwordHash) await burnPasswordCheck(password)
  const ok = row?.passwordHash ? await verifyPassword(row.passwordHash, password) : false
  if (!ok || !row) {
    // The attempt's row already says failure.
    await writeAudit({ ...ctx, actor: email }, 'login_failed', { email })
    throw unauthorized('invalid email or password')
  }
  if (row.totpEnabled) {
    const pendingToken = await startTotpPendingLogin(row.id)
    await writeTransaction(async (tx) => {
      await settleLoginAttempt(tx, attemptId)
      await writeAudit({ ...ctx, actor: row.email }, 'login_totp_pending', { user_id: row.id }, tx)
    })
    return { totpPending: true, pendingToken }
  }
  return writeTransaction(async (tx) => {
    await settleLoginAttempt(tx, attemptId)
    const session = await createSession(tx, row.id, ctx)
    await writeAudit({ ...ctx, actor: row.email }, 'login', { user_id: row.id, provider: 'local' }, tx)
    return { totpPending: false as const, user: presentSessionUser(row), ...session }
  })
}

/** First-run setup: only while no user exists. Creates the first admin and logs them in. */
export async function setupFirstAdmin(input: { email: string; password: string; name?: string }, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    if ((await countUsers(tx)) > 0) throw conflict('setup is already done: log in instead')
    const row = await insertUser(tx, { ...input, role: 'admin' })
    const session = await createSession(tx, row.id, ctx)
    await writeAudit({ ...ctx, actor: row.email }, 'setup', { user_id: row.id, email: row.email }, tx)
    return { user: presentUser(row), ...session }
  })
}

/** PANEL_ADMIN_EMAIL/PANEL_ADMIN_PASSWORD create the first admin at boot when no user exists. */
export async function bootstrapAdminFromEnv(email: string | undefined, password: string | undefined): Promise<void> {
  if (!email || !password) return
  await writeTransaction(async (tx) => {
    if ((await countUsers(tx)) > 0) return
    const row = await insertUser(tx, { email: email.toLowerCase(), password, name: 'Administrator', role: 'admin' })
    await writeAudit(systemActor('bootstrap'), 'user_create', { user_id: row.id, email: row.email, role: 'admin', from: 'environment' }, tx)
    logger.info(`created the first admin ${row.email} from PANEL_ADMIN_EMAIL`)
  })
}
