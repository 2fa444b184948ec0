import { sql } from 'drizzle-orm'
import { countryBans, targetGroups } from '../../../db/schema'
import { getDb } from '../core/db'
import { listCertificateExpiries } from '../hosts/cert-expiry'
import { readGeoStatus } from '../geo/refresh'
import { securityEngineHealth } from '../security/engine-health'
import { readProxyHealth } from '../proxy/sync/loop'
import { lastBackup } from './backups'
import { CERT_WARNING_DAYS } from './alerts'
import { readTargetHealth } from './target-health'
import { logger } from '../core/log'
import { dnsCheckProblems } from '../proxy/dns-check'
import { failingNodeStorages } from '../proxy/sync/state'

// One list of what is wrong, for /api/dashboard/health and /api/system/health
// alike: each problem says what, why, since when, and where in the panel it is
// fixed (a screen and the section on it). "error": something does not work now
// (a target down, a certificate missing or expired, country bans without their
// database); "warning": it will, or it works worse (expiring, a stale database).

/** A country/ASN database built longer ago than this is stale: new address ranges are missing. */
export const GEO_STALE_DAYS = 30

export type ProblemKind =
  | 'proxy_unreachable'
  | 'proxy_rejected'
  | 'security_engine_unreachable'
  | 'target_unhealthy'
  | 'certificate_failed'
  | 'certificate_expired'
  | 'certificate_expiring'
  | 'geo_database_missing'
  | 'geo_database_stale'
  | 'backup_failed'
  | 'dns_check_failed'
  | 'dns_check_pending'
  | 'proxy_storage_unreachable'

export interface HealthProblem {
  kind: ProblemKind
  severity: 'error' | 'warning'
  /** What is affected, in words ("target 127.0.0.1:8080 of group web"). */
  subject: string
  /** Why, in words. */
  text: string
  since: string | null
  /** The screen (and section) where it is fixed: a path of the web UI. */
  fix: { to: string; text: string }
}

const _DAY_MS = 86_400_000

async function _targetProblems(): Promise<HealthProblem[]> {
  const [health, groups] = await Promise.all([
    readTargetHealth(),
    getDb().select({ id: targetGroups.id, name: targetGroups.name }).from(targetGroups),
  ])
  const out: HealthProblem[] = []
  for (const g of groups)
    for (const t of health.get(g.id)?.targets ?? [])
      if (t.state === 'unhealthy')
        out.push({
          kind: 'target_unhealthy',
          severity: 'error',
          subject: `target ${t.address} of group ${g.name}`,
          text: t.cause ?? 'unhealthy',
          since: t.since,
          fix: { to: `/target-groups#group-${g.id}`, text: `Target group ${g.name}` },
        })
  return out
}

async function _certificateProblems(nowMs: number): Promise<HealthProblem[]> {
  const out: HealthProblem[] = []
  for (const c of await listCertificateExpiries()) {
    if (c.last_failure)
      out.push({
        kind: 'certificate_failed',
        severity: 'error',
        subject: `certificate of ${c.domain}`,
        text: `${c.last_failure.operation === 'renew' ? 'renewal' : 'order'} failed: ${c.last_failure.cause}`,
        since: c.last_failure.at,
        fix: { to: '/certificates#fail-h', text: 'Failed ACME attempts' },
      })
    if (!c.not_after) continue
    const left = Date.parse(c.not_after) - nowMs
    const where =
      c.source === 'manual'
        ? { to: '/certificates#up-h', text: 'Uploaded certificates' }
        : { to: '/certificates#ov-h', text: 'Certificates' }
    if (left <= 0)
      out.push({
        kind: 'certificate_expired',
        severity: 'error',
        subject: `${c.source === 'manual' ? 'uploaded ' : ''}certificate of ${c.domain}`,
        text: 'expired: browsers refuse the site',
        since: c.not_after,
        fix: where,
      })
    else if (left <= CERT_WARNING_DAYS * _DAY_MS)
      out.push({
        kind: 'certificate_expiring',
        severity: 'warning',
        subject: `${c.source === 'manual' ? 'uploaded ' : ''}certificate of ${c.domain}`,
        text: `expires in ${Math.floor(left / _DAY_MS)} day(s)${c.source === 'manual' ? ': upload a new one' : ''}`,
        since: null,
        fix: where,
      })
  }
  return out
}

async function _geoProblems(nowMs: number): Promise<HealthProblem[]> {
  const geo = await readGeoStatus()
  const fix = { to: '/security#countries', text: 'Download the databases' }
  const [bans] = await getDb().select({ n: sql<number>`count(*)` }).from(countryBans)
  const banned = Number(bans?.n ?? 0)
  if (!geo.country.loaded)
    return [
      {
        kind: 'geo_database_missing',
        severity: banned ? 'error' : 'warning',
        subject: 'country database',
        text: banned
          ? `not loaded: ${banned} country ban(s) cannot follow address changes`
          : 'not loaded: logs and dashboards show no countries, and countries cannot be banned',
        since: null,
        fix,
      },
    ]
  const built = geo.country.build_epoch ? geo.country.build_epoch * 1000 : null
  if (built !== null && nowMs - built > GEO_STALE_DAYS * _DAY_MS)
    return [
      {
        kind: 'geo_database_stale',
        severity: 'warning',
        subject: 'country database',
        text: `${Math.floor((nowMs - built) / _DAY_MS)} days old (more than ${GEO_STALE_DAYS}): addresses that moved are placed in the wrong country`,
        since: new Date(built).toISOString(),
        fix,
      },
    ]
  return []
}

async function _componentProblems(): Promise<HealthProblem[]> {
  const out: HealthProblem[] = []
  const proxy = await readProxyHealth()
  if (proxy.reachable === false)
    out.push({
      kind: 'proxy_unreachable',
      severity: 'error',
      subject: 'proxy',
      text: 'its admin API does not answer: changes wait and are applied when it answers',
      since: null,
      fix: { to: '/logs?source=caddy_error', text: 'Proxy errors in the logs' },
    })
  else if (proxy.last_reconcile_status === 'rejected')
    out.push({
      kind: 'proxy_rejected',
      severity: 'error',
      subject: 'proxy',
      text: `refused the last configuration: ${proxy.last_error ?? 'see the proxy errors'}`,
      since: proxy.last_reconcile_at,
      fix: { to: '/revisions', text: 'Revisions' },
    })
  const engine = securityEngineHealth()
  if (engine.reachable === false)
    out.push({
      kind: 'security_engine_unreachable',
      severity: 'error',
      subject: 'security engine',
      text: engine.error ?? 'does not answer',
      since: engine.since,
      fix: { to: '/security', text: 'Security screen' },
    })
  // A node that cannot reach its certificate storage serves what it holds, but obtains and renews nothing.
  for (const n of failingNodeStorages())
    out.push({
      kind: 'proxy_storage_unreachable',
      severity: 'error',
      subject: `proxy node ${n.name}`,
      text: `its certificate storage fails: ${n.error ?? 'no reason given'}; it serves the certificates it holds but cannot obtain or renew any`,
      since: n.since,
      fix: { to: '/nodes#storage-h', text: 'Certificate storage on the Nodes screen' },
    })
  const backup = lastBackup()
  if (backup.last_backup_status === 'failed')
    out.push({
      kind: 'backup_failed',
      severity: 'error',
      subject: 'backups',
      text: 'the last backup failed',
      since: backup.last_backup_at,
      fix: { to: '/settings#bk-h', text: 'Backups in Settings' },
    })
  return out
}

/** A DNS provider whose last check failed: its hosts' orders would fail the same way (docs/dns-check.md). */
async function _dnsProblems(): Promise<HealthProblem[]> {
  return (await dnsCheckProblems()).map((p) => ({
    kind: p.severity === 'error' ? 'dns_check_failed' : 'dns_check_pending',
    severity: p.severity,
    subject: `DNS provider ${p.label}`,
    text: p.text,
    since: p.since,
    fix: { to: `/dns-providers#provider-${p.provider}`, text: `DNS provider ${p.label}` },
  }))
}

/** Every problem, errors first. Each source is read on its own: one failing read does not hide the others. */
export async function listHealthProblems(nowMs = Date.now()): Promise<HealthProblem[]> {
  const parts = await Promise.all(
    [_componentProblems(), _targetProblems(), _certificateProblems(nowMs), _geoProblems(nowMs), _dnsProblems()].map((p) =>
      p.catch((err) => {
        logger.warn(`health problems: a source could not be read: ${(err as Error).message}`)
        return [] as HealthProblem[]
      }),
    ),
  )
  return parts.flat().sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1))
}
