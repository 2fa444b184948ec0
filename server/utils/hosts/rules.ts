import { asc, eq } from 'drizzle-orm'
import { rules, targetGroups } from '../../../db/schema'
import { getDb, writeTransaction, type Tx } from '../core/db'
import { badRequest, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import type { RuleInput } from './schemas'
import { assertGeoPolicyAccessLists } from '../access/geo-references'
import { presentRule } from './present'
import { hostIdAndDomain, ruleToRow } from './records'

async function _assertGroup(tx: Tx, input: RuleInput): Promise<void> {
  await assertGeoPolicyAccessLists(tx, input.geo_policy)
  if (input.target_group_id === null) return
  const group = await tx.select({ id: targetGroups.id }).from(targetGroups).where(eq(targetGroups.id, input.target_group_id)).get()
  if (!group) throw badRequest(`target_group_id: target group ${input.target_group_id} does not exist`)
}

/** Only the fields of the rule's action are kept; the others are stored as null. */
function _columns(input: RuleInput) {
  return ruleToRow({
    ...input,
    target_group_id: input.action === 'proxy' ? input.target_group_id : null,
    redirect_url: input.action === 'redirect' ? input.redirect_url : null,
    redirect_status: input.action === 'redirect' ? (input.redirect_status ?? 302) : null,
    respond_status: input.action === 'respond' ? (input.respond_status ?? 200) : null,
    respond_body: input.action === 'respond' ? (input.respond_body ?? '') : null,
    // An importer's rule carries none (the column is NOT NULL).
    header_rules: input.header_rules ?? [],
  })
}

export async function listRulesOfHost(hostId: number) {
  await hostIdAndDomain(getDb(), hostId)
  return (await getDb().select().from(rules).where(eq(rules.hostId, hostId)).orderBy(asc(rules.priority), asc(rules.id))).map(presentRule)
}

/** Inside the caller's transaction: checked, inserted and audited; the caller reconciles. */
export async function insertRule(tx: Tx, hostId: number, input: RuleInput, ctx: AuditContext) {
  await _assertGroup(tx, input)
  const now = new Date().toISOString()
  const row = (await tx
    .insert(rules)
    .values({ hostId, ..._columns(input), createdAt: now, updatedAt: now })
    .returning()
    .get())!
  await writeAudit(ctx, 'rule_create', { rule_id: row.id, host_id: hostId, path: row.path, action: row.action }, tx)
  return row
}

export async function createRule(hostId: number, input: RuleInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const host = await hostIdAndDomain(tx, hostId)
    const row = await insertRule(tx, hostId, input, ctx)
    const o = await reconcileInTransaction(tx, ctx, `rule ${row.path} of ${host.domain} created`)
    return { ...presentRule(row), reconcile: presentReconcile(o) }
  })
}

export async function updateRule(id: number, input: RuleInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const current = await tx.select().from(rules).where(eq(rules.id, id)).get()
    if (!current) throw notFound('rule', id)
    await _assertGroup(tx, input)
    const row = (await tx
      .update(rules)
      .set({ ..._columns(input), updatedAt: new Date().toISOString() })
      .where(eq(rules.id, id))
      .returning()
      .get())!
    await writeAudit(ctx, 'rule_update', { rule_id: id, host_id: row.hostId, path: row.path, action: row.action }, tx)
    // Reasons name the rule by its path and host (the Revisions screen shows them as they are).
    const host = await hostIdAndDomain(tx, row.hostId)
    const o = await reconcileInTransaction(tx, ctx, `rule ${row.path} of ${host.domain} updated`)
    return { ...presentRule(row), reconcile: presentReconcile(o) }
  })
}

export async function deleteRule(id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const current = await tx.select().from(rules).where(eq(rules.id, id)).get()
    if (!current) throw notFound('rule', id)
    await tx.delete(rules).where(eq(rules.id, id))
    await writeAudit(ctx, 'rule_delete', { rule_id: id, host_id: current.hostId }, tx)
    const host = await hostIdAndDomain(tx, current.hostId)
    await reconcileInTransaction(tx, ctx, `rule ${current.path} of ${host.domain} deleted`)
  })
}
