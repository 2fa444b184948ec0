import { and, eq, gte, sql } from 'drizzle-orm'
import { logs } from '../../../db/schema'
import { getDb } from '../core/db'
import { listCertificateExpiries } from '../hosts/cert-expiry'
import { emitPanelEvent } from './events'

// Events derived from what the panel observes. Rules decide how often they
// notify (their throttle); these functions only tell.

export const CERT_WARNING_DAYS = 21
export const WAF_BURST_PER_MINUTE = 10

/** cert_expiring_soon / manual_cert_expiring_soon for every certificate within the warning window. */
export async function checkCertificateExpiry(nowMs = Date.now()): Promise<number> {
  let n = 0
  for (const c of await listCertificateExpiries()) {
    if (!c.not_after) continue
    const left = Date.parse(c.not_after) - nowMs
    if (left > CERT_WARNING_DAYS * 86_400_000) continue
    emitPanelEvent(c.source === 'manual' ? 'manual_cert_expiring_soon' : 'cert_expiring_soon', {
      host_id: c.host_id, domain: c.domain, not_after: c.not_after, days_left: Math.floor(left / 86_400_000),
    })
    n++
  }
  return n
}

/** After an ingested batch: a burst of WAF matches, or rate-limited requests, become events. */
export async function checkIngestedBatch(source: string, statuses: Array<number | null | undefined>, nowMs = Date.now()): Promise<void> {
  if (source === 'caddy_access') {
    const limited = statuses.filter((s) => s === 429).length
    if (limited) emitPanelEvent('rate_limit_triggered', { requests: limited })
  } else if (source === 'waf_audit') {
    const [r] = await getDb().select({ n: sql<number>`count(*)` }).from(logs).where(and(eq(logs.source, 'waf_audit'), gte(logs.tsMs, nowMs - 60_000)))
    if (Number(r?.n ?? 0) >= WAF_BURST_PER_MINUTE) emitPanelEvent('waf_attack_burst', { matches_last_minute: Number(r!.n) })
  }
}
