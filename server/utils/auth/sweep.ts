import { getDb, runWrite } from '../core/db'
import { systemActor, writeAudit } from '../core/audit'
import { ATTEMPT_RETENTION_MS, deleteAttemptsOlderThan } from './attempts'
import { deleteExpiredSessions } from './sessions'
import { sweepExpiredOidcStates } from './oidc'
import { totpPendingLogins } from './totp'
import { passkeyChallenges } from './passkeys'

export interface AuthSweepResult {
  expired_sessions: number
  expired_oidc_states: number
  expired_totp_pending: number
  expired_passkey_challenges: number
  login_attempts: number
  totp_attempts: number
  api_token_attempts: number
}

/**
 * Task auth:sweep (every 10 minutes and at boot): expired sessions, expired
 * OIDC pending states, pending TOTP logins and passkey challenges, and attempt rows older than 24 h.
 * Writes an audit row when it removed a session or an attempt row.
 */
export async function sweepAuthState(nowMs = Date.now()): Promise<AuthSweepResult> {
  const expired_sessions = await runWrite(() => deleteExpiredSessions(getDb(), nowMs))
  const attempts = await runWrite(() => deleteAttemptsOlderThan(getDb(), nowMs - ATTEMPT_RETENTION_MS))
  const result: AuthSweepResult = {
    expired_sessions,
    expired_oidc_states: await sweepExpiredOidcStates(),
    expired_totp_pending: await totpPendingLogins.sweepExpired(),
    expired_passkey_challenges: await passkeyChallenges.sweepExpired(),
    login_attempts: attempts.login,
    totp_attempts: attempts.totp,
    api_token_attempts: attempts.api_token,
  }
  if (expired_sessions || attempts.login || attempts.totp || attempts.api_token)
    await writeAudit(systemActor('auth-sweep'), 'auth_sweep', { ...result })
  return result
}
