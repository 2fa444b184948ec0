import { isIP } from 'node:net'
import { z } from 'zod'
import { kvGetFresh, kvRemove, kvSetWithTtl } from '../core/kv'
import { writeAudit, type AuditContext } from '../core/audit'
import { badRequest } from '../core/errors'
import { ipOrCidrText, parseGoDurationMs } from '../core/validate'
import { deleteDecisionById, fetchActiveDecisions, type LapiDecision } from './lapi'
import { lookupIp } from '../geo/readers'
import { mirrorEnabled, mirrorSnapshot, syncMirrorNow, type MirrorRecord } from './mirror'

export const DECISION_CACHE_TTL_MS = 15_000
const _CACHE_KEY = 'security:decisions'
export const SCOPES = ['Ip', 'Range', 'Country', 'AS'] as const
/** Decisions of a country ban are managed as a whole (revocation), never one by one from an unban. */
export const COUNTRY_ORIGIN_PREFIX = 'panel-country-'

export interface PresentedDecision {
  id: number
  value: string
  scope: string
  type: string
  origin: string
  scenario: string
  duration: string
  until: string | null
  country: string | null
  as_number: number | null
}

function _annotate(d: { scope: string; value: string }): { country: string | null; as_number: number | null } {
  if (d.scope !== 'Ip' && d.scope !== 'Range') return { country: null, as_number: null }
  try {
    const g = lookupIp(d.value.split('/')[0]!)
    return { country: g.country, as_number: g.as_number }
  } catch {
    return { country: null, as_number: null }
  }
}

/** Milliseconds as Go prints a duration rounded to the second (4h0m0s, 59m7s, 3s), as the engine words the time left. */
export function formatGoDuration(ms: number): string {
  const neg = ms < 0
  let s = Math.round(Math.abs(ms) / 1000)
  if (s === 0) return '0s'
  const h = Math.floor(s / 3600)
  s -= h * 3600
  const m = Math.floor(s / 60)
  s -= m * 60
  return (neg ? '-' : '') + (h ? `${h}h${m}m${s}s` : m ? `${m}m${s}s` : `${s}s`)
}

/** The fields every answer about a decision carries, as the engine names them. */
export function decisionIdentity(d: Pick<LapiDecision, 'id' | 'value' | 'scope' | 'type' | 'origin' | 'scenario'>) {
  return { id: d.id, value: d.value, scope: d.scope, type: d.type, origin: d.origin, scenario: d.scenario }
}

function _present(d: LapiDecision, nowMs: number): PresentedDecision {
  const left = parseGoDurationMs(d.duration)
  return {
    ...decisionIdentity(d),
    duration: d.duration,
    until: left === null ? null : new Date(nowMs + left).toISOString(),
    ..._annotate(d),
  }
}

/** A held decision as the list answers it: the time left counted now, not when it was read. */
export function presentDecisionRecord(r: MirrorRecord, nowMs: number): PresentedDecision {
  return {
    ...decisionIdentity(r),
    duration: formatGoDuration(r.untilMs - nowMs),
    until: new Date(r.untilMs).toISOString(),
    ..._annotate(r),
  }
}

export const DECISIONS_PAGE_MAX = 1000
const _intParam = () =>
  z
    .string()
    .regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')
    .optional()

export const decisionsQuery = z.strictObject({
  q: z.string().max(200, 'must be at most 200 characters').optional(),
  scope: z.enum(SCOPES, { message: `scope: must be one of ${SCOPES.join(', ')}` }).optional(),
  origin: z.string().max(100).optional(),
  limit: _intParam().describe(`page size, 1 to ${DECISIONS_PAGE_MAX}; without limit and before_id the answer holds every active decision`),
  before_id: _intParam().describe(
    'the cursor: decisions with a smaller id (the X-Next-Before-Id of the previous page); with it and no limit, pages of 100',
  ),
  fresh: z
    .enum(['1', 'true'], { message: 'fresh: must be 1 or true' })
    .optional()
    .describe('read the engine first (the mirror pulls now, the 15 s copy is dropped): a refresh that bypasses the cache'),
  hide_country_bans: z
    .enum(['1', 'true'], { message: 'hide_country_bans: must be 1 or true' })
    .optional()
    .describe('leave out the ranges of country bans (origin panel-country-*), which GET /api/security/countries sums up per country'),
})

export interface DecisionsPage {
  /** The matching records, newest first: present each with `presentDecisionRecord(r, page.nowMs)`. */
  records: MirrorRecord[]
  /** The moment the page was cut (durations are counted from it). */
  nowMs: number
  /** Every active decision matching the filters, paged or not. */
  total: number
  /** The before_id of the next page; null on the last page (and without paging). */
  nextBeforeId: number | null
  /** When the decisions were read from the engine (the mirror's last pull, or the fallback's read). */
  syncedAt: string
  source: 'mirror' | 'engine'
}

/** Without the panel's own key: every active decision read with the proxy's, held 15 s. */
async function _fallbackSnapshot(): Promise<{ records: MirrorRecord[]; syncedAt: number; version: number }> {
  let cached = await kvGetFresh<{ records: MirrorRecord[]; syncedAt: number }>(_CACHE_KEY)
  if (!cached) {
    const now = Date.now()
    const records = (await fetchActiveDecisions())
      .map(
        (d): MirrorRecord => ({
          id: Number(d.id),
          origin: d.origin,
          type: d.type,
          scope: d.scope,
          value: d.value,
          scenario: d.scenario,
          untilMs: now + (parseGoDurationMs(d.duration) ?? 0),
          valueLc: d.value.toLowerCase(),
          scenarioLc: d.scenario.toLowerCase(),
        }),
      )
      .sort((a, b) => a.id - b.id)
    cached = { records, syncedAt: now }
    await kvSetWithTtl(_CACHE_KEY, cached, DECISION_CACHE_TTL_MS)
  }
  return { ...cached, version: -cached.syncedAt }
}

let _totalCache: { key: string; total: number } | undefined

type _Filter = Pick<z.infer<typeof decisionsQuery>, 'q' | 'scope' | 'origin' | 'fresh' | 'hide_country_bans'>

/** The decisions held now (mirror or 15 s copy) and the test of a record against q/scope/origin/hide_country_bans. */
async function _readFiltered(filter: _Filter) {
  const mirror = mirrorEnabled()
  if (filter.fresh) await invalidateDecisionCache()
  const hideCountry = !!filter.hide_country_bans
  const snap = mirror ? await mirrorSnapshot() : await _fallbackSnapshot()
  const now = Date.now()
  const q = filter.q?.toLowerCase(),
    scope = filter.scope?.toLowerCase(),
    origin = filter.origin
  const match = (r: MirrorRecord) =>
    r.untilMs >= now &&
    (!scope || r.scope.toLowerCase() === scope) &&
    (!origin || r.origin === origin) &&
    (!q || r.valueLc.includes(q) || r.scenarioLc.includes(q)) &&
    (!hideCountry || !r.origin.startsWith(COUNTRY_ORIGIN_PREFIX))
  return {
    snap,
    now,
    match,
    source: (mirror ? 'mirror' : 'engine') as DecisionsPage['source'],
    filterKey: `${scope ?? ''}|${origin ?? ''}|${q ?? ''}|${hideCountry}`,
  }
}

/**
 * Active decisions, newest id first, from the mirror (LAPI_PANEL_BOUNCER_KEY) or the
 * 15 s fallback; q/scope/origin filter them. Without limit and before_id, all of them
 * (the interface's contract); with either, one page and the cursor of the next.
 */
export async function listDecisions(filter: z.infer<typeof decisionsQuery>): Promise<DecisionsPage> {
  if (Number(filter.limit ?? 1) > DECISIONS_PAGE_MAX) throw badRequest(`limit: must be an integer from 1 to ${DECISIONS_PAGE_MAX}`)
  const { snap, now, match, source, filterKey } = await _readFiltered(filter)
  const { records } = snap
  const paged = filter.limit !== undefined || filter.before_id !== undefined
  const limit = paged ? Number(filter.limit ?? 100) : Infinity
  // Walk down from the cursor: the first index whose id is not below before_id, minus one.
  let i = records.length - 1
  if (filter.before_id !== undefined) {
    const before = Number(filter.before_id)
    let lo = 0,
      hi = records.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (records[mid]!.id < before) lo = mid + 1
      else hi = mid
    }
    i = lo - 1
  }
  const page: MirrorRecord[] = []
  let more = false
  for (; i >= 0; i--) {
    const r = records[i]!
    if (!match(r)) continue
    if (page.length === limit) {
      more = true
      break
    }
    page.push(r)
  }
  // The total of a filter is counted once per mirror state and second (paging through it repeats it).
  let total = page.length
  if (paged) {
    const key = `${snap.version}|${Math.floor(now / 1000)}|${filterKey}`
    if (_totalCache?.key !== key) {
      let n = 0
      for (const r of records) if (match(r)) n++
      _totalCache = { key, total: n }
    }
    total = _totalCache.total
  }
  return {
    records: page,
    nowMs: now,
    total,
    nextBeforeId: more ? page[page.length - 1]!.id : null,
    syncedAt: new Date(snap.syncedAt).toISOString(),
    source,
  }
}

export const decisionOriginsQuery = decisionsQuery.pick({ q: true, scope: true, fresh: true })

/**
 * How many active decisions each origin holds (crowdsec, cscli, CAPI, lists,
 * panel, panel-country-<CC>...), under the same q and scope as the list, most
 * first: the list pages by id across origins, so the screen groups a page by
 * origin and takes each group's size from here.
 */
export async function countDecisionsByOrigin(filter: z.infer<typeof decisionOriginsQuery>) {
  const { snap, match, source } = await _readFiltered(filter)
  const counts = new Map<string, number>()
  for (const r of snap.records) if (match(r)) counts.set(r.origin, (counts.get(r.origin) ?? 0) + 1)
  const origins = [...counts]
    .map(([origin, count]) => ({ origin, count, country_ban: origin.startsWith(COUNTRY_ORIGIN_PREFIX) }))
    .sort((a, b) => b.count - a.count || a.origin.localeCompare(b.origin))
  return {
    origins,
    total: origins.reduce((n, o) => n + o.count, 0),
    synced_at: new Date(snap.syncedAt).toISOString(),
    source,
  }
}

/** After a panel change of decisions: the mirror pulls the change now, the fallback forgets its copy. */
export async function invalidateDecisionCache(): Promise<void> {
  if (!mirrorEnabled()) return kvRemove(_CACHE_KEY)
  await syncMirrorNow().catch(() => {
    /* logged by the mirror; its next tick retries */
  })
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
export const unbanIpBody = z.strictObject({ ip: ipOrCidrText({ cidr: false }) })

/** The active decisions banning an address, split into those unban-ip removes and the country-ban ranges it keeps. */
async function _coveringDecisions(ip: string) {
  const now = Date.now()
  const covering = await fetchActiveDecisions({ ip })
  return {
    removable: covering.filter((d) => !d.origin.startsWith(COUNTRY_ORIGIN_PREFIX)),
    kept: covering.filter((d) => d.origin.startsWith(COUNTRY_ORIGIN_PREFIX)).map((d) => _present(d, now)),
    now,
  }
}

export const unbanIpQuery = z.strictObject({ ip: z.string().max(64) })

/** What unban-ip would do for this address, read straight from the engine (no cache): nothing is removed. */
export async function previewUnbanIp(ip: string) {
  const { removable, kept, now } = await _coveringDecisions(ip)
  return { ip, would_remove: removable.map((d) => _present(d, now)), kept_country_decisions: kept }
}

export async function unbanIp(ip: string, ctx: AuditContext) {
  const { removable, kept } = await _coveringDecisions(ip)
  const removed: number[] = []
  for (const d of removable) {
    await deleteDecisionById(d.id)
    removed.push(d.id)
  }
  await invalidateDecisionCache()
  await writeAudit(ctx, 'decision_unban_ip', { ip, removed_decision_ids: removed, kept_country_decisions: kept.length })
  return { ip, removed_decision_count: removed.length, removed_decision_ids: removed, kept_country_decisions: kept }
}
