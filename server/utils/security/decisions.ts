import { isIP } from 'node:net'
import { z } from 'zod'
import { kvGetFresh, kvRemove, kvSetWithTtl } from '../core/kv'
import { writeAudit, type AuditContext } from '../core/audit'
import { badRequest } from '../core/errors'
import { parseGoDurationMs } from '../core/validate'
import { deleteDecisionById, fetchActiveDecisions, type LapiDecision } from './lapi'
import { lookupIp } from '../geo/readers'

export const DECISION_CACHE_TTL_MS = 15_000
const _CACHE_KEY = 'security:decisions'
export const SCOPES = ['Ip', 'Range', 'Country', 'AS'] as const
/** Decisions of a country ban are managed as a whole (revocation), never one by one from an unban. */
export const COUNTRY_ORIGIN_PREFIX = 'panel-country-'

export interface PresentedDecision {
  id: number; value: string; scope: string; type: string; origin: string; scenario: string; duration: string
  until: string | null; country: string | null; as_number: number | null
}


function _annotate(d: LapiDecision): { country: string | null; as_number: number | null } {
  if (d.scope !== 'Ip' && d.scope !== 'Range') return { country: null, as_number: null }
  try {
    const g = lookupIp(d.value.split('/')[0]!)
    return { country: g.country, as_number: g.as_number }
  } catch { return { country: null, as_number: null } }
}

function _present(d: LapiDecision, nowMs: number): PresentedDecision {
  const left = parseGoDurationMs(d.duration)
  return {
    id: d.id, value: d.value, scope: d.scope, type: d.type, origin: d.origin, scenario: d.scenario, duration: d.duration,
    until: left === null ? null : new Date(nowMs + left).toISOString(),
    ..._annotate(d),
  }
}

export const decisionsQuery = z.object({
  q: z.string().max(200).optional(),
  scope: z.enum(SCOPES, { message: `scope: must be one of ${SCOPES.join(', ')}` }).optional(),
  origin: z.string().max(100).optional(),
})

/** Active decisions, answered from a 15 s cache; q/scope/origin filter the cached list. */
export async function listDecisions(filter: z.infer<typeof decisionsQuery>): Promise<PresentedDecision[]> {
  let all = await kvGetFresh<PresentedDecision[]>(_CACHE_KEY)
  if (!all) {
    const now = Date.now()
    all = (await fetchActiveDecisions()).map((d) => _present(d, now)).sort((a, b) => b.id - a.id)
    await kvSetWithTtl(_CACHE_KEY, all, DECISION_CACHE_TTL_MS)
  }
  const q = filter.q?.toLowerCase()
  return all.filter((d) => (!filter.scope || d.scope.toLowerCase() === filter.scope.toLowerCase())
    && (!filter.origin || d.origin === filter.origin)
    && (!q || d.value.toLowerCase().includes(q) || d.scenario.toLowerCase().includes(q)))
}

export async function invalidateDecisionCache(): Promise<void> {
  await kvRemove(_CACHE_KEY)
}

export async function deleteDecision(id: number, ctx: AuditContext) {
  const result = await deleteDecisionById(id)
  await invalidateDecisionCache()
  await writeAudit(ctx, 'decision_delete', { decision_id: id, result })
  return result
}

export function assertIp(value: string, field = 'ip'): string {
  const v = value.trim()
  if (!isIP(v)) throw badRequest(`${field}: must be an IPv4 or IPv6 address`)
  return v
}

/**
 * Removes every active decision that bans this address: its Ip decisions and
 * every Range containing it, except the ranges of a country ban (removing one
 * would unban a whole network; those are revoked per country).
 */
export const unbanIpBody = z.strictObject({ ip: z.string().max(64) })

export async function unbanIp(ip: string, ctx: AuditContext) {
  const covering = await fetchActiveDecisions({ ip })
  const removed: number[] = []
  const kept: PresentedDecision[] = []
  const now = Date.now()
  for (const d of covering) {
    if (d.origin.startsWith(COUNTRY_ORIGIN_PREFIX)) { kept.push(_present(d, now)); continue }
    await deleteDecisionById(d.id)
    removed.push(d.id)
  }
  await invalidateDecisionCache()
  await writeAudit(ctx, 'decision_unban_ip', { ip, removed_decision_ids: removed, kept_country_decisions: kept.length })
  return { ip, removed_decision_count: removed.length, removed_decision_ids: removed, kept_country_decisions: kept }
}
