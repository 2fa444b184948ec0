import { createHmac } from 'node:crypto'
import { eq, inArray } from 'drizzle-orm'
import nodemailer from 'nodemailer'
import { z } from 'zod'
import { notificationChannels, notificationRules, users } from '../../../../db/schema'
import { getDb, runWrite, writeTransaction, type Executor } from '../../core/db'
import { badRequest, conflict, isUniqueViolation, notFound } from '../../core/errors'
import { getSecretsBox } from '../../core/secrets'
import { getSetting, UNCHANGED } from '../../core/settings'
import { emailSchema, safeText, urlSchema } from '../../core/validate'
import { writeAudit, type AuditContext } from '../../core/audit'
import type { PanelEvent } from '../events'
import { deliverPush, pushChannelConfig } from './push'

// Channel catalogue: which config keys each type has and which are secret
// (write-only, sealed, "__UNCHANGED__" keeps them). One declaration drives the
// validation, the presenter and the sender.

const _httpUrl = urlSchema()
const _chatShape = {
  flavor: z.enum(['slack', 'discord', 'telegram'], { message: 'must be slack, discord or telegram' }),
  webhook_url: _httpUrl.optional(),
  bot_token: safeText(256).optional(),
  chat_id: safeText(64).optional(),
  api_base: _httpUrl.optional(),
}
function _chatNeeds(c: { flavor: string; webhook_url?: string; bot_token?: string; chat_id?: string }, ctx: z.RefinementCtx): void {
  if (c.flavor === 'telegram' && (!c.bot_token || !c.chat_id))
    ctx.addIssue({ code: 'custom', path: ['bot_token'], message: 'telegram needs bot_token and chat_id' })
  if (c.flavor !== 'telegram' && !c.webhook_url)
    ctx.addIssue({ code: 'custom', path: ['webhook_url'], message: `${c.flavor} needs webhook_url` })
}
export const CHANNEL_TYPES = {
  webhook: { schema: z.strictObject({ url: _httpUrl, secret: safeText(512).optional() }), secrets: ['secret'] },
  email: { schema: z.strictObject({ to: z.array(emailSchema).min(1, 'needs at least one recipient').max(50) }), secrets: [] },
  // Incoming-webhook URLs carry their own token: treated as secrets too.
  chat: { schema: z.strictObject(_chatShape).superRefine(_chatNeeds), secrets: ['webhook_url', 'bot_token'] },
  // Sent to the browsers' stored push subscriptions (push.ts): all of them, or those of `user_ids`.
  push: { schema: pushChannelConfig, secrets: [] },
} as const
type ChannelType = keyof typeof CHANNEL_TYPES

const _channelFields = { name: safeText(100, { min: 1 }), enabled: z.boolean().default(true) }
/** A secret part as sent: its value, "" (remove it) or "__UNCHANGED__" (keep the stored one; saveChannel resolves it). */
const _sentSecret = <T extends z.ZodType>(schema: T) => z.union([z.literal(UNCHANGED), z.literal(''), schema])

/**
 * One object per channel type, so that the document shows each type's config;
 * saveChannel validates the config again once "__UNCHANGED__" is resolved.
 */
export const channelBody = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ ..._channelFields, type: z.literal('webhook'), config: CHANNEL_TYPES.webhook.schema }),
    z.strictObject({ ..._channelFields, type: z.literal('email'), config: CHANNEL_TYPES.email.schema }),
    z.strictObject({
      ..._channelFields,
      type: z.literal('chat'),
      config: z.strictObject({ ..._chatShape, webhook_url: _sentSecret(_httpUrl).optional() }).superRefine(_chatNeeds),
    }),
    z.strictObject({ ..._channelFields, type: z.literal('push'), config: CHANNEL_TYPES.push.schema }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? 'must be webhook, email, chat or push' : undefined) },
)

type Row = typeof notificationChannels.$inferSelect
const _owner = (id: number) => `notification_channels/${id}/secrets`

export function presentChannel(r: Row) {
  const secretKeys = r.type in CHANNEL_TYPES ? CHANNEL_TYPES[r.type as ChannelType].secrets : []
  const secrets: Record<string, string> = r.secrets ? JSON.parse(getSecretsBox().open(r.secrets, _owner(r.id))) : {}
  const config: Record<string, unknown> = { ...r.config }
  for (const k of secretKeys) config[k] = secrets[k] ? '__SET__' : ''
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    enabled: r.enabled,
    config,
    last_status: r.lastStatus,
    last_error: r.lastError,
    last_sent_at: r.lastSentAt,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  }
}

function _split(type: string, raw: Record<string, unknown>, stored: Record<string, string>) {
  const def = CHANNEL_TYPES[type as ChannelType]
  const merged: Record<string, unknown> = { ...raw }
  for (const k of def.secrets) {
    if (merged[k] === UNCHANGED) {
      if (stored[k] === undefined) throw badRequest(`config.${k}: "${UNCHANGED}" given but nothing is stored`)
      merged[k] = stored[k]
    }
    if (merged[k] === '') delete merged[k]
  }
  const r = def.schema.safeParse(merged)
  if (!r.success) {
    const i = r.error.issues[0]!
    throw badRequest(
      `config.${i.path.join('.') || 'body'}: ${i.code === 'unrecognized_keys' ? `unknown field ${i.keys.join(', ')}` : i.message}`,
    )
  }
  const config: Record<string, unknown> = {},
    secrets: Record<string, string> = {}
  for (const [k, v] of Object.entries(r.data))
    if (v !== undefined) (def.secrets as readonly string[]).includes(k) ? (secrets[k] = String(v)) : (config[k] = v)
  return { config, secrets }
}

export async function listChannels() {
  return (await getDb().select().from(notificationChannels).orderBy(notificationChannels.id)).map(presentChannel)
}

export async function saveChannel(id: number | null, body: z.infer<typeof channelBody>, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const current = id === null ? undefined : await tx.select().from(notificationChannels).where(eq(notificationChannels.id, id)).get()
    if (id !== null && !current) throw notFound('notification channel', id)
    const stored = current?.secrets ? JSON.parse(getSecretsBox().open(current.secrets, _owner(current.id))) : {}
    const { config, secrets } = _split(body.type, body.config as Record<string, unknown>, current?.type === body.type ? stored : {})
    const userIds = (config.user_ids ?? []) as number[]
    if (userIds.length) {
      const known = (await tx.select({ id: users.id }).from(users).where(inArray(users.id, userIds))).map((u) => u.id)
      const missing = userIds.find((u) => !known.includes(u))
      if (missing !== undefined) throw badRequest(`config.user_ids: user ${missing} does not exist`)
    }
    const now = new Date().toISOString()
    let row: Row
    try {
      row = current
        ? (await tx
            .update(notificationChannels)
            .set({ name: body.name, type: body.type, enabled: body.enabled, config, updatedAt: now })
            .where(eq(notificationChannels.id, current.id))
            .returning()
            .get())!
        : (await tx
            .insert(notificationChannels)
            .values({ name: body.name, type: body.type, enabled: body.enabled, config, createdAt: now, updatedAt: now })
            .returning()
            .get())!
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`name: a channel named "${body.name}" exists`)
      throw err
    }
    const sealed = Object.keys(secrets).length ? getSecretsBox().seal(JSON.stringify(secrets), _owner(row.id)) : null
    row = (await tx.update(notificationChannels).set({ secrets: sealed }).where(eq(notificationChannels.id, row.id)).returning().get())!
    await writeAudit(
      ctx,
      current ? 'notification_channel_update' : 'notification_channel_create',
      { channel_id: row.id, name: row.name, type: row.type },
      tx,
    )
    return presentChannel(row)
  })
}

export async function deleteChannel(id: number, ctx: AuditContext) {
  await writeTransaction(async (tx) => {
    const row = await tx.select().from(notificationChannels).where(eq(notificationChannels.id, id)).get()
    if (!row) throw notFound('notification channel', id)
    const users = (await tx.select().from(notificationRules)).filter((r) => r.channelIds.includes(id))
    if (users.length) throw conflict(`notification channel ${id} is used by rule ${users[0]!.id}; change that rule first`)
    await tx.delete(notificationChannels).where(eq(notificationChannels.id, id))
    await writeAudit(ctx, 'notification_channel_delete', { channel_id: id }, tx)
  })
}

function _text(e: PanelEvent): string {
  return `[edge panel] ${e.name} at ${e.at}${Object.keys(e.details).length ? `: ${JSON.stringify(e.details)}` : ''}`
}

async function _post(url: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    signal: AbortSignal.timeout(10_000),
  })
  if (!res.ok) throw Object.assign(new Error(`answered ${res.status}`), { transient: res.status >= 500 || res.status === 429 })
}

/** Delivers one event on one channel; a thrown error with `transient` is retried by the worker. */
export async function deliver(channelId: number, event: PanelEvent): Promise<void> {
  const row = await getDb().select().from(notificationChannels).where(eq(notificationChannels.id, channelId)).get()
  if (!row) throw new Error(`channel ${channelId} no longer exists`)
  const secrets: Record<string, string> = row.secrets ? JSON.parse(getSecretsBox().open(row.secrets, _owner(row.id))) : {}
  const c = row.config as Record<string, any>
  try {
    if (row.type === 'webhook') {
      const body = JSON.stringify({ event: event.name, at: event.at, details: event.details })
      const headers: Record<string, string> = { 'x-panel-event': event.name }
      if (secrets.secret) headers['x-panel-signature'] = `sha256=${createHmac('sha256', secrets.secret).update(body).digest('hex')}`
      await _post(c.url, body, headers)
    } else if (row.type === 'email') {
      const host = await getSetting<string>('smtp.host')
      if (!host) throw new Error('smtp.host is not set')
      const user = await getSetting<string>('smtp.username')
      const transport = nodemailer.createTransport({
        host,
        port: await getSetting<number>('smtp.port'),
        secure: (await getSetting<number>('smtp.port')) === 465,
        auth: user ? { user, pass: await getSetting<string>('smtp.password') } : undefined,
        connectionTimeout: 10_000,
      })
      await transport.sendMail({
        from: (await getSetting<string>('smtp.from')) || `panel@${host}`,
        to: c.to,
        subject: `[edge panel] ${event.name}`,
        text: _text(event),
      })
    } else if (row.type === 'chat') {
      if (c.flavor === 'telegram')
        await _post(
          `${c.api_base ?? 'https://api.telegram.org'}/bot${secrets.bot_token}/sendMessage`,
          JSON.stringify({ chat_id: c.chat_id, text: _text(event) }),
        )
      else await _post(secrets.webhook_url!, JSON.stringify(c.flavor === 'discord' ? { content: _text(event) } : { text: _text(event) }))
    } else if (row.type === 'push') {
      await deliverPush(c, event, _text(event))
    } else {
      throw new Error(`channel type ${row.type} cannot send`)
    }
  } catch (err) {
    // Never a secret in the recorded error: URLs with tokens are replaced by the channel's name.
    let message = (err as Error).message
    for (const s of Object.values(secrets)) if (s) message = message.split(s).join('***')
    throw Object.assign(new Error(message), { transient: (err as any).transient ?? !(err as any).responseCode })
  }
}

/** Every stored channel secret (webhook signing secrets, chat webhook URLs and bot tokens), for redaction. */
export async function channelSecrets(exec: Executor): Promise<string[]> {
  const rows = await exec.select({ id: notificationChannels.id, secrets: notificationChannels.secrets }).from(notificationChannels)
  return rows.flatMap((r) =>
    r.secrets ? Object.values(JSON.parse(getSecretsBox().open(r.secrets, _owner(r.id))) as Record<string, string>) : [],
  )
}

export async function recordDelivery(channelId: number, ok: boolean, error: string | null) {
  await runWrite(() =>
    getDb()
      .update(notificationChannels)
      .set({ lastStatus: ok ? 'ok' : 'failed', lastError: error, lastSentAt: new Date().toISOString() })
      .where(eq(notificationChannels.id, channelId)),
  )
}
