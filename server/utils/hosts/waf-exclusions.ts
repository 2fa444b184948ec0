import { asc, eq } from 'drizzle-orm'
import { logs, wafExclusions } from '../../../db/schema'
import { getDb, writeTransaction, type Tx } from '../core/db'
import { badRequest, conflict, isUniqueViolation, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { presentWafExclusion } from './present'
import { hostIdAndDomain } from './records'
import { WAF_EXCLUSION_PATH } from '../proxy/build/waf-rules'
import type { WafExclusionFromLogInput, WafExclusionInput } from './schemas'

// Per-host WAF rule exclusions (docs/waf.md): the first answer to a false positive.
// Each change is pushed to the proxy in the same transaction as its audit row.

export async function listWafExclusions(hostId: number) {
  await hostIdAndDomain(getDb(), hostId)
  return (await getDb().select().from(wafExclusions).where(eq(wafExclusions.hostId, hostId)).orderBy(asc(wafExclusions.id))).map(
    presentWafExclusion,
  )
}

async function _insert(tx: Tx, hostId: number, input: WafExclusionInput, sourceLogId: number | null, ctx: AuditContext) {
  const host = await hostIdAndDomain(tx, hostId)
  let row: typeof wafExclusions.$inferSelect
  try {
    row = (await tx
      .insert(wafExclusions)
      .values({
        hostId,
        ruleId: input.rule_id,
        path: input.path,
        argument: input.argument,
        note: input.note,
        sourceLogId,
        createdAt: new Date().toISOString(),
      })
      .returning()
      .get())!
  } catch (err) {
    if (isUniqueViolation(err))
      throw conflict(
        `rule ${input.rule_id} is already excluded on host ${hostId} for ${input.path ?? 'every path'}${input.argument ? ` and argument ${input.argument}` : ''}`,
      )
    throw err
  }
  await writeAudit(
    ctx,
    'waf_exclusion_create',
    {
      exclusion_id: row.id,
      host_id: hostId,
      rule_id: row.ruleId,
      path: row.path,
      argument: row.argument,
      source_log_id: sourceLogId,
    },
    tx,
  )
  const o = await reconcileInTransaction(tx, ctx, `WAF rule ${row.ruleId} excluded on ${host.domain}`)
  return { ...presentWafExclusion(row), reconcile: presentReconcile(o) }
}

export async function createWafExclusion(hostId: number, input: WafExclusionInput, ctx: AuditContext) {
  return writeTransaction((tx) => _insert(tx, hostId, input, null, ctx))
}

/** The path as Coraza's REQUEST_FILENAME holds it: the URI without its query, percent-decoded. */
export function exclusionPathOfUri(uri: string): string {
  const path = uri.split(/[?#]/, 1)[0]!
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

/** One click from a waf_audit row: the row's host and rule, under the row's path unless scope is "host". */
export async function createWafExclusionFromLog(logId: number, input: WafExclusionFromLogInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const row = await tx.select().from(logs).where(eq(logs.id, logId)).get()
    if (!row) throw notFound('log row', logId)
    if (row.source !== 'waf_audit') throw badRequest(`log row ${logId} is a ${row.source} row: exclusions are made from waf_audit rows`)
    if (row.hostId === null)
      throw badRequest(
        `log row ${logId} names no known host (${row.hostDomain ?? 'no host'}): create the exclusion on the host with POST /api/hosts/{id}/waf-exclusions`,
      )
    if (row.wafRuleId === null) throw badRequest(`log row ${logId} names no WAF rule: create the exclusion with an explicit rule_id`)
    let path: string | null = null
    if (input.scope === 'path') {
      path = exclusionPathOfUri(row.path ?? '/')
      if (!WAF_EXCLUSION_PATH.test(path) || path.includes('%{') || path.endsWith('*'))
        throw badRequest(
          `log row ${logId}: its path ${JSON.stringify(path)} cannot be matched safely; use scope "host" or create the exclusion with a path of your own`,
        )
    }
    return _insert(tx, row.hostId, { rule_id: row.wafRuleId, path, argument: input.argument, note: input.note }, logId, ctx)
  })
}

export async function deleteWafExclusion(id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const current = await tx.select().from(wafExclusions).where(eq(wafExclusions.id, id)).get()
    if (!current) throw notFound('WAF exclusion', id)
    await tx.delete(wafExclusions).where(eq(wafExclusions.id, id))
    await writeAudit(
      ctx,
      'waf_exclusion_delete',
      { exclusion_id: id, host_id: current.hostId, rule_id: current.ruleId, path: current.path, argument: current.argument },
      tx,
    )
    const host = await hostIdAndDomain(tx, current.hostId)
    await reconcileInTransaction(
      tx,
      ctx,
      `WAF rule ${current.ruleId} no longer excluded on ${host.domain}${current.path ? ` under ${current.path}` : ''}`,
    )
  })
}
