import { and, desc, eq } from 'drizzle-orm'
import { logs, wafExclusions } from '../../../db/schema'
import { getDb, writeTransaction, type Executor } from '../core/db'
import { badRequest, conflict, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { getSetting } from '../core/settings'
import { parseWafLine, type WafRuleHit } from '../logs/parse'
import { wafRulesOf } from '../logs/present'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { WAF_CONTROL_RULE_RANGE, WAF_EXCLUSION_PATH } from '../proxy/build/waf-rules'
import { presentWafExclusion } from './present'
import { hostIdAndDomain } from './records'
import { exclusionPathOfUri } from './waf-exclusions'
import type { WafUnblockInput } from './schemas'

// "Exclude" that unblocks (docs/waf.md, "Exclusions that unblock"). Under CRS anomaly
// scoring a request is refused by the SUM of the rules it matched, so turning off the one
// rule a row names can leave it blocked. From a waf_audit row's stored rules this offers
// the smallest set of exclusions that brings the request under the inbound threshold,
// previews any set against the host's stored rows, and creates a set in one mutation.

/** How many of a host's most recent WAF rows a preview reads. */
export const PREVIEW_ROWS = 1000

type Scope = 'path' | 'host'
interface ExclusionLike {
  ruleId: number
  path: string | null
  argument: string | null
}

export const isControlRule = (id: number) => id >= WAF_CONTROL_RULE_RANGE[0] && id <= WAF_CONTROL_RULE_RANGE[1]

/** Whether an exclusion's path (exact, or a prefix when it ends with `*`) covers a request path; null covers all. */
function _pathCovers(exclusionPath: string | null, requestPath: string): boolean {
  if (exclusionPath === null) return true
  return exclusionPath.endsWith('*') ? requestPath.startsWith(exclusionPath.slice(0, -1)) : requestPath === exclusionPath
}

/**
 * The rule ids of `list` that apply to a request on `requestPath`. An exclusion limited to
 * an argument is left out: a stored row does not say which argument each rule matched, so
 * it cannot be known to apply (a preview then errs on the side of "still blocked").
 */
export function excludedRuleIds(list: ExclusionLike[], requestPath: string): Set<number> {
  return new Set(list.filter((e) => e.argument === null && _pathCovers(e.path, requestPath)).map((e) => e.ruleId))
}

/** The inbound anomaly score left when `excluded` rules are off. */
export function remainingScore(rules: WafRuleHit[], excluded: Set<number>): number {
  return rules.reduce((sum, r) => sum + (excluded.has(r.id) ? 0 : r.score), 0)
}

export interface UnblockOffer {
  /** The rules to exclude, highest score first. */
  rule_ids: number[]
  /** For each offered rule: the score left once it (and the ones before it) are excluded. */
  steps: Array<{ rule_id: number; score: number; remaining: number }>
  /** The score before the offer (rules already excluded for this scope left out). */
  score: number
  /** Whether the offer brings the request under the threshold. */
  unblocks: boolean
}

/**
 * The smallest set of rules whose exclusion brings the score under the threshold: the
 * highest-scoring rules first (no smaller set can remove as many points). Rules already
 * excluded and the panel's control rules (which cannot be excluded) are not offered.
 */
export function offerWafExclusionSet(rules: WafRuleHit[], threshold: number, alreadyExcluded: Set<number>): UnblockOffer {
  const score = remainingScore(rules, alreadyExcluded)
  const candidates = rules
    .filter((r) => r.score > 0 && !alreadyExcluded.has(r.id) && !isControlRule(r.id))
    .sort((a, b) => b.score - a.score || a.id - b.id)
  const steps: UnblockOffer['steps'] = []
  let remaining = score
  for (const r of candidates) {
    if (remaining < threshold) break
    remaining -= r.score
    steps.push({ rule_id: r.id, score: r.score, remaining })
  }
  return { rule_ids: steps.map((s) => s.rule_id), steps, score, unblocks: remaining < threshold }
}

const _noLookups = { hostIdOf: () => null, countryOf: () => null }

/** A row's matched rules: the stored list, or (rows ingested before it was stored) read again from the raw line. */
function _rulesOfRow(row: typeof logs.$inferSelect): WafRuleHit[] {
  const stored = wafRulesOf(row.wafRules)
  if (stored) return stored
  return (row.raw && wafRulesOf(parseWafLine(row.raw, _noLookups).wafRules ?? null)) || []
}

async function _threshold(): Promise<number> {
  return Math.trunc(await getSetting<number>('appsec.inbound_threshold'))
}

async function _hostExclusions(exec: Executor, hostId: number): Promise<ExclusionLike[]> {
  return exec
    .select({ ruleId: wafExclusions.ruleId, path: wafExclusions.path, argument: wafExclusions.argument })
    .from(wafExclusions)
    .where(eq(wafExclusions.hostId, hostId))
}

export interface PreviewCounts {
  /** Stored WAF rows of the host (the last PREVIEW_ROWS) whose rules reach the threshold: the blocked requests. */
  considered: number
  /** Of those, how many would pass with the host's exclusions plus the proposed ones. */
  would_pass: number
  /** Of those, how many already pass with the host's current exclusions alone. */
  already_passing: number
}

/**
 * What excluding `ruleIds` under `path` (null: the whole host) would have done to the
 * host's last stored WAF rows: a request passes when the scores of its rules left on add
 * up to less than the threshold. Rows are those the proxy logged (blocked, or detected in
 * detection mode); rows ingested before the rules were stored are read from their raw line.
 */
export async function previewWafExclusionSet(
  hostId: number,
  ruleIds: number[],
  path: string | null,
  exec: Executor = getDb(),
  threshold?: number,
): Promise<PreviewCounts & { threshold: number }> {
  await hostIdAndDomain(exec, hostId)
  const limit = threshold ?? (await _threshold())
  const existing = await _hostExclusions(exec, hostId)
  const proposed = ruleIds.map((ruleId) => ({ ruleId, path, argument: null }))
  const rows = await exec
    .select()
    .from(logs)
    .where(and(eq(logs.source, 'waf_audit'), eq(logs.hostId, hostId)))
    .orderBy(desc(logs.id))
    .limit(PREVIEW_ROWS)
  const out: PreviewCounts = { considered: 0, would_pass: 0, already_passing: 0 }
  for (const row of rows) {
    const rules = _rulesOfRow(row)
    if (remainingScore(rules, new Set()) < limit) continue
    out.considered++
    const requestPath = exclusionPathOfUri(row.path ?? '/')
    const before = excludedRuleIds(existing, requestPath)
    if (remainingScore(rules, before) < limit) out.already_passing++
    const after = excludedRuleIds([...existing, ...proposed], requestPath)
    if (remainingScore(rules, after) < limit) out.would_pass++
  }
  return { ...out, threshold: limit }
}

/** The exclusion path of a row for scope "path", or why it cannot be one. */
function _rowExclusionPath(row: typeof logs.$inferSelect): { path: string | null; unsafe: string | null } {
  const path = exclusionPathOfUri(row.path ?? '/')
  if (!WAF_EXCLUSION_PATH.test(path) || path.includes('%{') || path.endsWith('*') || path.length > 512)
    return {
      path: null,
      unsafe: `its path ${JSON.stringify(path)} cannot be matched safely; use scope "host" or create the exclusions on the host with a path of your own`,
    }
  return { path, unsafe: null }
}

async function _wafRow(exec: Executor, logId: number) {
  const row = await exec.select().from(logs).where(eq(logs.id, logId)).get()
  if (!row) throw notFound('log row', logId)
  if (row.source !== 'waf_audit') throw badRequest(`log row ${logId} is a ${row.source} row: exclusions are made from waf_audit rows`)
  if (row.hostId === null)
    throw badRequest(
      `log row ${logId} names no known host (${row.hostDomain ?? 'no host'}): create the exclusions on the host with POST /api/hosts/{id}/waf-exclusions`,
    )
  return { row, hostId: row.hostId }
}

/**
 * A waf_audit row explained: every rule it matched with its score, the total against the
 * threshold, and per scope (its path, or the whole host) the set that would unblock it
 * with that set's preview against the host's stored rows.
 */
export async function wafUnblockOfLog(logId: number) {
  const db = getDb()
  const { row, hostId } = await _wafRow(db, logId)
  const threshold = await _threshold()
  const rules = _rulesOfRow(row)
  const existing = await _hostExclusions(db, hostId)
  const requestPath = exclusionPathOfUri(row.path ?? '/')
  const { path, unsafe } = _rowExclusionPath(row)
  const scopes: Record<Scope, { path: string | null; excluded: Set<number> } | null> = {
    path: path === null ? null : { path, excluded: excludedRuleIds(existing, requestPath) },
    host: {
      path: null,
      excluded: excludedRuleIds(
        existing.filter((e) => e.path === null),
        requestPath,
      ),
    },
  }
  const offers: Record<Scope, unknown> = { path: null, host: null }
  for (const scope of ['path', 'host'] as const) {
    const s = scopes[scope]
    if (!s) continue
    const offer = offerWafExclusionSet(rules, threshold, s.excluded)
    let preview: PreviewCounts | null = null
    if (offer.rule_ids.length) {
      const { considered, would_pass, already_passing } = await previewWafExclusionSet(hostId, offer.rule_ids, s.path, db, threshold)
      preview = { considered, would_pass, already_passing }
    }
    offers[scope] = { path: s.path, ...offer, already_excluded: rules.filter((r) => s.excluded.has(r.id)).map((r) => r.id), preview }
  }
  return {
    log_id: row.id,
    host_id: hostId,
    host_domain: row.hostDomain,
    request_path: requestPath,
    threshold,
    score: remainingScore(rules, new Set()),
    rules: rules.map((r) => ({ ...r, excludable: !isControlRule(r.id) })),
    path_unusable: unsafe,
    offers,
  }
}

/**
 * Creates a set of exclusions from a waf_audit row in one transaction: one audit row, one
 * reconcile (one revision). Without `rule_ids`, the offered set for the scope. Rules
 * already excluded for that scope are skipped and named in the answer.
 */
export async function createWafExclusionSetFromLog(logId: number, input: WafUnblockInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const { row, hostId } = await _wafRow(tx, logId)
    const host = await hostIdAndDomain(tx, hostId)
    let path: string | null = null
    if (input.scope === 'path') {
      const p = _rowExclusionPath(row)
      if (p.unsafe) throw badRequest(`log row ${logId}: ${p.unsafe}`)
      path = p.path
    }
    const rules = _rulesOfRow(row)
    if (!rules.length) throw badRequest(`log row ${logId} names no WAF rule: create the exclusion on the host with an explicit rule_id`)
    const existing = await _hostExclusions(tx, hostId)
    const sameScope = new Set(existing.filter((e) => e.argument === null && e.path === path).map((e) => e.ruleId))
    let ruleIds: number[]
    if (input.rule_ids) {
      const matched = new Set(rules.map((r) => r.id))
      input.rule_ids.forEach((id, i) => {
        if (!matched.has(id))
          throw badRequest(`rule_ids.${i}: rule ${id} did not match in log row ${logId}; its rules are ${[...matched].join(', ')}`)
      })
      ruleIds = [...new Set(input.rule_ids)]
    } else {
      const excludedNow =
        input.scope === 'path'
          ? excludedRuleIds(existing, exclusionPathOfUri(row.path ?? '/'))
          : excludedRuleIds(
              existing.filter((e) => e.path === null),
              '/',
            )
      const offer = offerWafExclusionSet(rules, await _threshold(), excludedNow)
      if (!offer.unblocks)
        throw badRequest(
          `log row ${logId}: no set of excludable rules brings this request under the threshold (the panel's control rules ${WAF_CONTROL_RULE_RANGE[0]}-${WAF_CONTROL_RULE_RANGE[1]} cannot be excluded); name the rules with rule_ids`,
        )
      ruleIds = offer.rule_ids
    }
    const toCreate = ruleIds.filter((id) => !sameScope.has(id))
    const already = ruleIds.filter((id) => sameScope.has(id))
    if (!toCreate.length) throw conflict(`rules ${already.join(', ')} are already excluded on host ${hostId} for ${path ?? 'every path'}`)
    const created = await tx
      .insert(wafExclusions)
      .values(
        toCreate.map((ruleId) => ({
          hostId,
          ruleId,
          path,
          argument: null,
          note: input.note,
          sourceLogId: logId,
          createdAt: new Date().toISOString(),
        })),
      )
      .returning()
    await writeAudit(
      ctx,
      'waf_exclusion_create',
      {
        exclusion_ids: created.map((c) => c.id),
        host_id: hostId,
        rule_ids: toCreate,
        path,
        argument: null,
        source_log_id: logId,
      },
      tx,
    )
    const o = await reconcileInTransaction(
      tx,
      ctx,
      `WAF rules ${toCreate.join(', ')} excluded on ${host.domain}${path ? ` under ${path}` : ''}`,
    )
    return { exclusions: created.map(presentWafExclusion), already_excluded: already, reconcile: presentReconcile(o) }
  })
}
