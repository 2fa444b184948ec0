import { eq, inArray } from 'drizzle-orm'
import { ECDH } from 'node:crypto'
import webpush from 'web-push'
import { z } from 'zod'
import { pushSubscriptions } from '../../../../db/schema'
import { getDb, runWrite, writeTransaction, type Executor } from '../../core/db'
import { notFound } from '../../core/errors'
import { getSecretsBox } from '../../core/secrets'
import { getConfig } from '../../core/config'
import { readRuntimeState, writeRuntimeState } from '../../core/runtime-state'
import { systemActor, writeAudit, type AuditContext } from '../../core/audit'
import { logger } from '../../core/log'
import { urlSchema } from '../../core/validate'
import type { PanelEvent } from '../events'

// Web push (RFC 8030 delivery, RFC 8291 payload encryption, RFC 8292 VAPID).
// The VAPID key pair is generated once (first boot) and kept in runtime_state,
// the private key sealed: it never leaves the server. Browsers subscribe with
// the public key; their subscriptions (endpoint + keys, keys sealed) are
// stored. A `push` channel sends each event to the stored subscriptions; a
// subscription the push service reports gone (404/410) is removed.

const _VAPID_KEY = 'push.vapid'
const _VAPID_OWNER = 'runtime_state/push.vapid'
const _subOwner = (endpoint: string) => `push_subscriptions/${endpoint}`
/** Push services accept about 4 KiB of encrypted payload; details beyond this are cut. */
const _MAX_PAYLOAD_BYTES = 3_000

interface _StoredVapid {
  public_key: string
  private_key_sealed: string
}
let _vapid: { publicKey: string; privateKey: string } | undefined

/** Creates the VAPID key pair at first boot; later boots (and restores) load it. */
export async function ensureVapidKeys(): Promise<string> {
  let stored = await readRuntimeState<_StoredVapid>(_VAPID_KEY)
  if (!stored) {
    const keys = webpush.generateVAPIDKeys()
    stored = await runWrite(async () => {
      const again = await readRuntimeState<_StoredVapid>(_VAPID_KEY)
      if (again) return again
      const fresh = { public_key: keys.publicKey, private_key_sealed: getSecretsBox().seal(keys.privateKey, _VAPID_OWNER) }
      await writeRuntimeState(getDb(), _VAPID_KEY, fresh)
      return fresh
    })
  }
  if (_vapid?.publicKey !== stored.public_key)
    _vapid = { publicKey: stored.public_key, privateKey: getSecretsBox().open(stored.private_key_sealed, _VAPID_OWNER) }
  return stored.public_key
}

/** The VAPID private key, for redaction (none before the first boot made it). */
export async function vapidSecrets(exec: Executor): Promise<string[]> {
  const stored = await readRuntimeState<_StoredVapid>(_VAPID_KEY, exec)
  return stored ? [getSecretsBox().open(stored.private_key_sealed, _VAPID_OWNER)] : []
}

/** GET /api/notifications/push/public-key: the application server key browsers subscribe with. */
export async function vapidPublicKey() {
  return { public_key: await ensureVapidKeys() }
}

// base64url with its exact length as a pattern (the document carries it), the decoded size checked again.
const _b64url = (bytes: number, pattern: RegExp, problem: string) =>
  z
    .string()
    .regex(pattern, problem)
    .refine((v) => Buffer.from(v, 'base64url').length === bytes, problem)

// 65 bytes with the 0x04 prefix are not yet a key: one random value in 256 has that shape, and the
// encryption to it would fail at every delivery. OpenSSL refuses a point off the curve.
function _isPointOnP256(value: string): boolean {
  try {
    ECDH.convertKey(Buffer.from(value, 'base64url'), 'prime256v1')
    return true
  } catch {
    return false
  }
}

/** The browser's PushSubscription.toJSON(). */
export const pushSubscriptionBody = z.strictObject({
  endpoint: urlSchema(),
  expirationTime: z.number().nullable().optional(),
  keys: z.strictObject({
    // 65 bytes starting with 0x04 (an uncompressed point): 87 characters starting with B, one = of padding at most.
    p256dh: _b64url(65, /^B[A-Za-z0-9_-]{86}=?$/, 'must be an uncompressed P-256 point (65 bytes of base64url)').refine(
      _isPointOnP256,
      'must be an uncompressed P-256 point (65 bytes of base64url)',
    ),
    auth: _b64url(16, /^[A-Za-z0-9_-]{22}(==)?$/, 'must be 16 bytes of base64url (the authentication secret)'),
  }),
})

type SubRow = typeof pushSubscriptions.$inferSelect
export function presentSubscription(r: SubRow) {
  // The endpoint is a capability URL of the push service: only its origin is shown.
  return {
    id: r.id,
    endpoint_origin: new URL(r.endpoint).origin,
    user_id: r.userId,
    user_agent: r.userAgent,
    last_status: r.lastStatus,
    last_error: r.lastError,
    last_sent_at: r.lastSentAt,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  }
}

export async function listSubscriptions() {
  return (await getDb().select().from(pushSubscriptions).orderBy(pushSubscriptions.id)).map(presentSubscription)
}

/** Stores (or refreshes, same endpoint) a subscription; `created` tells which. */
export async function saveSubscription(
  body: z.infer<typeof pushSubscriptionBody>,
  userId: number | null,
  userAgent: string | null,
  ctx: AuditContext,
) {
  return writeTransaction(async (tx) => {
    const now = new Date().toISOString()
    const keys = getSecretsBox().seal(JSON.stringify(body.keys), _subOwner(body.endpoint))
    const current = await tx.select().from(pushSubscriptions).where(eq(pushSubscriptions.endpoint, body.endpoint)).get()
    const row = current
      ? (await tx
          .update(pushSubscriptions)
          .set({ keys, userId, userAgent, updatedAt: now })
          .where(eq(pushSubscriptions.id, current.id))
          .returning()
          .get())!
      : (await tx
          .insert(pushSubscriptions)
          .values({ endpoint: body.endpoint, keys, userId, userAgent, createdAt: now, updatedAt: now })
          .returning()
          .get())!
    await writeAudit(
      ctx,
      current ? 'notification_push_subscription_update' : 'notification_push_subscription_create',
      { subscription_id: row.id, endpoint_origin: new URL(row.endpoint).origin },
      tx,
    )
    return { created: !current, subscription: presentSubscription(row) }
  })
}

export async function deleteSubscription(id: number, ctx: AuditContext) {
  await writeTransaction(async (tx) => {
    const r = await tx.delete(pushSubscriptions).where(eq(pushSubscriptions.id, id))
    if (!r.rowsAffected) throw notFound('push subscription', id)
    await writeAudit(ctx, 'notification_push_subscription_delete', { subscription_id: id }, tx)
  })
}

/** Channel config of a `push` channel: every subscription, or those of the listed users. */
export const pushChannelConfig = z.strictObject({ user_ids: z.array(z.number().int().positive()).max(100).optional() })

function _payload(e: PanelEvent, text: string): string {
  const full = JSON.stringify({ title: `[edge panel] ${e.name}`, body: text, event: e.name, at: e.at, details: e.details })
  if (Buffer.byteLength(full) <= _MAX_PAYLOAD_BYTES) return full
  return JSON.stringify({
    title: `[edge panel] ${e.name}`,
    body: text.slice(0, 1_000),
    event: e.name,
    at: e.at,
    details: {},
    details_truncated: true,
  })
}

function _subject(): string {
  const cfg = getConfig()
  return cfg.publicUrl.startsWith('https://') ? cfg.publicUrl : `mailto:panel@${cfg.domain}`
}

async function _record(id: number, ok: boolean, error: string | null) {
  await runWrite(() =>
    getDb()
      .update(pushSubscriptions)
      .set({ lastStatus: ok ? 'ok' : 'failed', lastError: error, lastSentAt: new Date().toISOString() })
      .where(eq(pushSubscriptions.id, id)),
  )
}

/**
 * Sends one event to the channel's subscriptions. Gone subscriptions (404/410)
 * are removed; the delivery fails (transient on network errors, 5xx, 429) only
 * when no subscription received it.
 */
export async function deliverPush(config: z.infer<typeof pushChannelConfig>, event: PanelEvent, text: string): Promise<void> {
  await ensureVapidKeys()
  const vapid = _vapid!
  const subs = await getDb()
    .select()
    .from(pushSubscriptions)
    .where(config.user_ids?.length ? inArray(pushSubscriptions.userId, config.user_ids) : undefined)
    .orderBy(pushSubscriptions.id)
  if (!subs.length) throw Object.assign(new Error('no browser has subscribed to push notifications yet'), { transient: false })
  const payload = _payload(event, text)
  let delivered = 0,
    transient = false
  const errors: string[] = []
  for (const s of subs) {
    const keys = JSON.parse(getSecretsBox().open(s.keys, _subOwner(s.endpoint))) as { p256dh: string; auth: string }
    const origin = new URL(s.endpoint).origin
    try {
      // The library encrypts and signs; the request itself goes through fetch (timeouts, http on loopback).
      const req = webpush.generateRequestDetails({ endpoint: s.endpoint, keys }, payload, {
        vapidDetails: { subject: _subject(), publicKey: vapid.publicKey, privateKey: vapid.privateKey },
        TTL: 86_400,
        urgency: 'high',
      })
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(req.headers)) headers[k] = String(v)
      delete headers['Content-Length']
      const res = await fetch(s.endpoint, {
        method: req.method,
        headers,
        body: req.body ? new Uint8Array(req.body) : undefined,
        signal: AbortSignal.timeout(10_000),
      })
      if (res.status === 404 || res.status === 410) {
        await writeTransaction(async (tx) => {
          await tx.delete(pushSubscriptions).where(eq(pushSubscriptions.id, s.id))
          await writeAudit(
            systemActor('notifications'),
            'notification_push_subscription_expired',
            { subscription_id: s.id, endpoint_origin: origin, status: res.status },
            tx,
          )
        })
        logger.info(`push subscription ${s.id} (${origin}) is gone (${res.status}): removed`)
        continue
      }
      if (!res.ok) {
        if (res.status >= 500 || res.status === 429) transient = true
        throw new Error(`push service ${origin} answered ${res.status}`)
      }
      delivered++
      await _record(s.id, true, null)
    } catch (err) {
      const message =
        (err as Error).name === 'TimeoutError'
          ? `push service ${origin} did not answer within 10 s`
          : (err as Error).message.split(s.endpoint).join(origin)
      if (!/answered \d+$/.test(message)) transient = true
      errors.push(`subscription ${s.id}: ${message}`)
      await _record(s.id, false, message).catch(() => {})
    }
  }
  if (!delivered && errors.length) throw Object.assign(new Error(errors.join('; ')), { transient })
  if (!delivered) throw Object.assign(new Error('every push subscription has expired and was removed'), { transient: false })
}
