import type { H3Event } from 'h3'
import { logs } from '../../../db/schema'
import { afterCommit, runWrite, getDb, type Executor } from './db'
import { clientIpOf } from './request'
import { auditLevelOf, type AuditAction } from './audit-actions'

/** Who did something, from where. Background work uses actor `system:<task>`. */
export interface AuditContext {
  actor: string
  remoteIp?: string | null
  userAgent?: string | null
  /** The API token the actor used (issue 17): every row it causes names it, never its secret. */
  apiToken?: { id: number; name: string }
}

export function auditContextOf(event: H3Event): AuditContext {
  const user = event.context.auth?.user
  const token = event.context.auth?.apiToken
  return {
    actor: user ? user.email : 'anonymous',
    ...(token ? { apiToken: { id: token.id, name: token.name } } : {}),
    remoteIp: clientIpOf(event),
    userAgent: event.node.req.headers['user-agent']?.slice(0, 512) ?? null,
  }
}

export const systemActor = (task: string): AuditContext => ({ actor: `system:${task}` })

/**
 * Writes one audit row; `action` is one of audit-actions.ts. `details` must be built from an allow-list of fields
 * (never a request body, never a secret): it is stored as the row's raw JSON.
 * Pass the open transaction when the mutation runs in one, so both commit together.
 */
export async function writeAudit(
  ctx: AuditContext,
  action: AuditAction,
  details: Record<string, unknown> = {},
  exec?: Executor,
): Promise<void> {
  const row = {
    tsMs: Date.now(),
    source: 'audit' as const,
    actor: ctx.actor,
    message: action,
    remoteIp: ctx.remoteIp ?? null,
    userAgent: ctx.userAgent ?? null,
    level: auditLevelOf(action, details),
    raw: JSON.stringify({
      actor: ctx.actor,
      ...(ctx.apiToken ? { api_token_id: ctx.apiToken.id, api_token_name: ctx.apiToken.name } : {}),
      action,
      ...details,
    }),
  }
  const inserted = exec
    ? await exec.insert(logs).values(row).returning().get()
    : await runWrite(() => getDb().insert(logs).values(row).returning().get())
  if (inserted && _listeners.length)
    afterCommit(() => {
      for (const l of _listeners) l(inserted)
    })
}

type AuditRow = typeof logs.$inferSelect
const _listeners: Array<(row: AuditRow) => void> = []

/** The live tail subscribes here, so audit rows stream like ingested ones (after their commit). */
export function onAuditRow(listener: (row: AuditRow) => void): void {
  _listeners.push(listener)
}
