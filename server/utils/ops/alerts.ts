import { and, eq, gte, sql } from 'drizzle-orm'
import { logs, targetGroups } from '../../../db/schema'
import { getDb } from '../core/db'
import { listCertificateExpiries } from '../hosts/cert-expiry'
import { recordAcmeOutcomes, type AcmeLogLine } from '../hosts/acme-outcomes'
import { emitPanelEvent } from './events'

// Events derived from what the panel observes. Rules decide how often they
// notify (their throttle); these functions only tell.

export const CERT_WARNING_DAYS = 21
export const WAF_BURST_PER_MINUTE = 10
/** A target failing its checks again after this long without a failure is a new target_unhealthy. */
export const TARGET_QUIET_MS = 5 * 60_000
/** While a target keeps failing, target_unhealthy is repeated at most this often. */
export const TARGET_REPEAT_MS = 60 * 60_000
/** Failure lines for one certificate within this span (one line per issuer, retries) are one cert_renewal_failed. */
export const CERT_FAILURE_DEDUP_MS = 60_000
/** certmagic's lines (loggers tls.obtain / tls.renew) that end an attempt. */
const _ACME_OUTCOME_MESSAGES = new Set([
  'could not get certificate from issuer',
  'certificate obtained successfully',
  'certificate renewed successfully',
])

/** cert_expiring_soon / manual_cert_expiring_soon for every certificate within the warning window. */
export async function checkCertificateExpiry(nowMs = Date.now()): Promise<number> {
  let n = 0
  for (const c of await listCertificateExpiries()) {
    if (!c.not_after) continue
    const left = Date.parse(c.not_after) - nowMs
    if (left > CERT_WARNING_DAYS * 86_400_000) continue
    emitPanelEvent(c.source === 'manual' ? 'manual_cert_expiring_soon' : 'cert_expiring_soon', {
      host_id: c.host_id,
      domain: c.domain,
      not_after: c.not_after,
      days_left: Math.floor(left / 86_400_000),
    })
    n++
  }
  return n
}

export interface IngestedRow {
  status?: number | null
  raw?: string | null
  hostId?: number | null
  hostDomain?: string | null
  tsMs?: number
}

const _lastCertFailure = new Map<string, number>()
const _targets = new Map<string, { lastFailureMs: number; lastEmittedMs: number }>()

/** The target groups that list an upstream address (names, for the event). */
async function _groupsOf(address: string): Promise<string[]> {
  const groups = await getDb().select({ name: targetGroups.name, targets: targetGroups.targets }).from(targetGroups)
  return groups.filter((g) => g.targets.some((t) => t.address === address)).map((g) => g.name)
}

/**
 * Proxy lines of the error log that are events (see PROXY_EVENT_LOGGERS in the
 * proxy's logging): a certificate that could not be obtained or renewed, and a
 * target failing its active health check.
 */
async function _checkProxyErrorLines(rows: IngestedRow[], nowMs: number): Promise<void> {
  const acme: Array<AcmeLogLine & { hostId: number | null; issuer: unknown }> = []
  for (const r of rows) {
    const raw = r.raw ?? ''
    if (!raw.includes('"logger":"tls.') && !raw.includes('health_checker')) continue
    let e: Record<string, any>
    try {
      e = JSON.parse(raw)
    } catch {
      continue
    }
    const logger = String(e.logger ?? '')
    if ((logger === 'tls.obtain' || logger === 'tls.renew') && _ACME_OUTCOME_MESSAGES.has(e.msg)) {
      acme.push({
        name: String(e.identifier ?? r.hostDomain ?? ''),
        ok: e.msg !== 'could not get certificate from issuer',
        operation: logger === 'tls.renew' ? 'renew' : 'obtain',
        atMs: r.tsMs ?? nowMs,
        error: e.error === undefined ? undefined : String(e.error),
        hostId: r.hostId ?? null,
        issuer: e.issuer ?? null,
      })
    } else if (
      logger.startsWith('http.handlers.reverse_proxy.health_checker') &&
      typeof e.host === 'string' &&
      /failed|unexpected|expectations/i.test(String(e.msg))
    ) {
      const t = _targets.get(e.host) ?? { lastFailureMs: -Infinity, lastEmittedMs: -Infinity }
      const isNew = nowMs - t.lastFailureMs > TARGET_QUIET_MS || nowMs - t.lastEmittedMs > TARGET_REPEAT_MS
      t.lastFailureMs = nowMs
      if (isNew) {
        t.lastEmittedMs = nowMs
        emitPanelEvent('target_unhealthy', {
          target: e.host,
          target_groups: await _groupsOf(e.host),
          check: String(e.msg),
          status_code: e.status_code ?? null,
          error: e.error ? String(e.error).slice(0, 500) : null,
        })
      }
      _targets.set(e.host, t)
    }
  }
  // Each failure is kept (with its cause in words) for the host and certificates screens.
  const failures = await recordAcmeOutcomes(acme)
  for (const f of failures) {
    if (nowMs - (_lastCertFailure.get(f.name) ?? -Infinity) < CERT_FAILURE_DEDUP_MS) continue
    _lastCertFailure.set(f.name, nowMs)
    emitPanelEvent('cert_renewal_failed', {
      domain: f.name,
      host_id: f.line.hostId,
      operation: f.operation,
      issuer: f.line.issuer,
      kind: f.kind,
      cause: f.cause,
      error: (f.line.error ?? '').slice(0, 500),
    })
  }
}

/** After an ingested batch: a burst of WAF matches, rate-limited requests, and proxy failures become events. */
export async function checkIngestedBatch(source: string, rows: IngestedRow[], nowMs = Date.now()): Promise<void> {
  const statuses = rows.map((r) => r.status)
  if (source === 'caddy_error') await _checkProxyErrorLines(rows, nowMs)
  else if (source === 'caddy_access') {
    const limited = statuses.filter((s) => s === 429).length
    if (limited) emitPanelEvent('rate_limit_triggered', { requests: limited })
  } else if (source === 'waf_audit') {
    const [r] = await getDb()
      .select({ n: sql<number>`count(*)` })
      .from(logs)
      .where(and(eq(logs.source, 'waf_audit'), gte(logs.tsMs, nowMs - 60_000)))
    if (Number(r?.n ?? 0) >= WAF_BURST_PER_MINUTE) emitPanelEvent('waf_attack_burst', { matches_last_minute: Number(r!.n) })
  }
}
