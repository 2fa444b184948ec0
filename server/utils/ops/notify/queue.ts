import { eq, inArray } from 'drizzle-orm'
import { z } from 'zod'
import { notificationChannels, notificationRules } from '../../../../db/schema'
import { getDb, writeTransaction } from '../../core/db'
import { badRequest, notFound } from '../../core/errors'
import { getConfig } from '../../core/config'
import { kvGetFresh, kvSetWithTtl } from '../../core/kv'
import { writeAudit, type AuditContext } from '../../core/audit'
import { safeText } from '../../core/validate'
import { logger } from '../../core/log'
import { knownSecrets, makeRedactor, redactJson, redactSecrets } from '../../core/redact'
import type { PanelEvent, PanelEventName } from '../events'
import { deliver, recordDelivery } from './channels'

// Events -> rules -> a bounded in-memory queue -> one worker delivering with
// retries. A full queue drops the event and counts it; emitters never wait.

export const EVENT_NAMES: PanelEventName[] = [
  'backup_failed',
  'cert_renewal_failed',
  'cert_expiring_soon',
  'manual_cert_expiring_soon',
  'security_engine_down',
  'target_unhealthy',
  'health_degraded',
  'waf_attack_burst',
  'login_failed',
  'rate_limit_triggered',
  'config_change',
]
/** The spec's recommended throttles, used when a rule does not give one. */
export const RECOMMENDED_THROTTLE_SECONDS: Partial<Record<PanelEventName, number>> = {
  backup_failed: 0,
  cert_renewal_failed: 0,
  cert_expiring_soon: 86_400,
  security_engine_down: 300,
  target_unhealthy: 300,
  health_degraded: 600,
  waf_attack_burst: 300,
}
const _RETRY_DELAYS_MS = [500, 2_000]

export const ruleBody = z.strictObject({
  name: safeText(100, { min: 1 }),
  events: z.array(z.string()).min(1, 'needs at least one event').max(EVENT_NAMES.length),
  channel_ids: z.array(z.number().int().positive()).min(1, 'needs at least one channel').max(50),
  throttle_seconds: z
    .number()
    .int('must be an integer')
    .min(0, 'must not be negative')
    .max(30 * 86_400)
    .optional(),
  enabled: z.boolean().default(true),
})

type RuleRow = typeof notificationRules.$inferSelect
export function presentRule(r: RuleRow) {
  return {
    id: r.id,
    name: r.name,
    events: r.events,
    channel_ids: r.channelIds,
    throttle_seconds: r.throttleSeconds,
    enabled: r.enabled,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  }
}

export async function listRules() {
  return (await getDb().select().from(notificationRules).orderBy(notificationRules.id)).map(presentRule)
}

export async function saveRule(id: number | null, body: z.infer<typeof ruleBody>, ctx: AuditContext) {
  for (const e of body.events) {
    if (e === 'test')
      throw badRequest(
        `events: "test" is only sent by a channel's Test button and cannot be chosen in a rule; use ${EVENT_NAMES.join(', ')}`,
      )
    if (!(EVENT_NAMES as string[]).includes(e)) throw badRequest(`events: "${e}" is not an event; use ${EVENT_NAMES.join(', ')}`)
  }
  return writeTransaction(async (tx) => {
    const known = (
      await tx.select({ id: notificationChannels.id }).from(notificationChannels).where(inArray(notificationChannels.id, body.channel_ids))
    ).map((c) => c.id)
    const missing = body.channel_ids.find((c) => !known.includes(c))
    if (missing !== undefined) throw badRequest(`channel_ids: channel ${missing} does not exist`)
    const throttle = body.throttle_seconds ?? Math.max(0, ...body.events.map((e) => RECOMMENDED_THROTTLE_SECONDS[e as PanelEventName] ?? 0))
    const now = new Date().toISOString()
    const values = {
      name: body.name,
      events: body.events,
      channelIds: body.channel_ids,
      throttleSeconds: throttle,
      enabled: body.enabled,
      updatedAt: now,
    }
    let row: RuleRow | undefined
    if (id === null)
      row = await tx
        .insert(notificationRules)
        .values({ ...values, createdAt: now })
        .returning()
        .get()
    else {
      row = await tx.update(notificationRules).set(values).where(eq(notificationRules.id, id)).returning().get()
      if (!row) throw notFound('notification rule', id)
    }
    await writeAudit(
      ctx,
      id === null ? 'notification_rule_create' : 'notification_rule_update',
      { rule_id: row!.id, events: body.events },
      tx,
    )
    return presentRule(row!)
  })
}

export async function deleteRule(id: number, ctx: AuditContext) {
  await writeTransaction(async (tx) => {
    const r = await tx.delete(notificationRules).where(eq(notificationRules.id, id))
    if (!r.rowsAffected) throw notFound('notification rule', id)
    await writeAudit(ctx, 'notification_rule_delete', { rule_id: id }, tx)
  })
}

interface _Job {
  channelId: number
  event: PanelEvent
  attempt: number
}
const _queue: _Job[] = []
let _dropped = 0
let _working = false

export function queueHealth() {
  return {
    notification_queue_depth: _queue.length,
    notification_queue_capacity: getConfig().notificationQueueCapacity,
    notification_queue_dropped: _dropped,
  }
}

/**
 * Details often carry the proxy's or the engine's words (cert_renewal_failed's error):
 * every known secret is replaced before the event leaves the panel.
 */
async function _redactEvent(event: PanelEvent): Promise<PanelEvent> {
  return { ...event, details: redactJson(event.details, makeRedactor(await knownSecrets())) }
}

/** Called for every panel event: matching rules, their throttle, then the queue (never blocks). */
export async function routeEvent(raw: PanelEvent): Promise<void> {
  const rules = (await getDb().select().from(notificationRules).where(eq(notificationRules.enabled, true))).filter((r) =>
    r.events.includes(raw.name),
  )
  if (!rules.length) return
  const event = await _redactEvent(raw)
  for (const rule of rules) {
    if (rule.throttleSeconds > 0) {
      const key = `notify:throttle:${rule.id}:${event.name}`
      if (await kvGetFresh<boolean>(key)) continue
      await kvSetWithTtl(key, true, rule.throttleSeconds * 1000)
    }
    for (const channelId of rule.channelIds) {
      if (_queue.length >= getConfig().notificationQueueCapacity) {
        _dropped++
        continue
      }
      _queue.push({ channelId, event, attempt: 0 })
    }
  }
  void _work()
}

async function _work(): Promise<void> {
  if (_working) return
  _working = true
  try {
    for (let job = _queue.shift(); job; job = _queue.shift()) {
      try {
        await deliver(job.channelId, job.event)
        await recordDelivery(job.channelId, true, null)
      } catch (err) {
        const e = err as Error & { transient?: boolean }
        // A mail or chat server's answer may quote what it was given.
        const message = await redactSecrets(e.message)
        if (e.transient && job.attempt < _RETRY_DELAYS_MS.length) {
          const retry = { ...job, attempt: job.attempt + 1 }
          setTimeout(() => {
            _queue.push(retry)
            void _work()
          }, _RETRY_DELAYS_MS[job.attempt])
        } else {
          logger.warn(`notification ${job.event.name} on channel ${job.channelId} failed: ${message}`)
        }
        await recordDelivery(job.channelId, false, message).catch(() => {})
      }
    }
  } finally {
    _working = false
  }
}

/** The words of the Test button's message: whoever reads it must not look for a change. */
export const TEST_MESSAGE = 'a test message sent with the Test button: this channel works; nothing was changed'

/** POST …/channels/{id}/test: one delivery now, as its own event `test`, answered with its outcome. */
export async function sendTest(channelId: number) {
  if (!(await getDb().select().from(notificationChannels).where(eq(notificationChannels.id, channelId)).get()))
    throw notFound('notification channel', channelId)
  try {
    await deliver(channelId, { name: 'test', at: new Date().toISOString(), details: { message: TEST_MESSAGE } })
    await recordDelivery(channelId, true, null)
    return { status: 'ok' }
  } catch (err) {
    const message = await redactSecrets((err as Error).message)
    await recordDelivery(channelId, false, message)
    return { status: 'failed', error: message }
  }
}
