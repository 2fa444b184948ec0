import { afterCommit, getDb, type Executor, type Tx } from '../core/db'
import { getSetting } from '../core/settings'
import { writeAudit, type AuditContext } from '../core/audit'
import { deleteAllSessions } from './sessions'

/** The setting of strict session mode (docs/auth.md): off by default, as the interface describes the cookie. */
export const STRICT_SESSIONS_SETTING = 'auth.strict_sessions'

// A mirror of the setting in memory: every request reads it (the cookie's name, ForwardAuth's
// fast path), and the setting changes only through updateSettings, whose commit updates it
// (onStrictSessionsCommit), or a restore, which reloads it. Process-local, as the session cache is.
let _on = false

export function strictSessionsOn(): boolean {
  return _on
}

/** At boot and after the database was replaced (a restore). */
export async function loadStrictSessions(exec: Executor = getDb()): Promise<void> {
  _on = (await getSetting<boolean>(STRICT_SESSIONS_SETTING, exec)) === true
}

/**
 * The settings commit hook: a switch of the mode ends every session. The cookies already
 * handed out were set for the other mode (a Domain cookie every sibling received, or a
 * host-only one under another name); a session that outlived the switch would keep what
 * the operator just chose to take away. The mirror follows once the change has committed.
 */
export async function onStrictSessionsCommit(tx: Tx, changedKeys: string[], ctx: AuditContext): Promise<void> {
  if (!changedKeys.includes(STRICT_SESSIONS_SETTING)) return
  const on = (await getSetting<boolean>(STRICT_SESSIONS_SETTING, tx)) === true
  if (on === _on) return
  const ended = await deleteAllSessions(tx)
  await writeAudit(ctx, 'sessions_end_all', { reason: `${STRICT_SESSIONS_SETTING} turned ${on ? 'on' : 'off'}`, sessions_ended: ended }, tx)
  afterCommit(() => {
    _on = on
  })
}
