import { eq } from 'drizzle-orm'
import { hosts, rules, targetGroups } from '../../../db/schema'
import { getDb, writeTransaction, type Tx } from '../core/db'
import { conflict, isUniqueViolation, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import type { TargetGroupInput } from './schemas'
import { presentTargetGroup } from './present'
import { targetGroupToRow } from './records'
import { readTargetHealth } from '../ops/target-health'
import { streamUsingTargetGroup } from '../streams/records'

function _duplicateName(err: unknown, name: string): never {
  if (isUniqueViolation(err)) throw conflict(`name: a target group named "${name}" already exists`)
  throw err
}

/** Reads carry each target's health (ops/target-health.ts); a mutation's answer does not wait for the proxy. */
export async function listTargetGroups() {
  const rows = await getDb().select().from(targetGroups).orderBy(targetGroups.id)
  const health = await readTargetHealth()
  return rows.map((g) => ({ ...presentTargetGroup(g), health: health.get(g.id) ?? null }))
}

export async function getTargetGroup(id: number) {
  const row = await getDb().select().from(targetGroups).where(eq(targetGroups.id, id)).get()
  if (!row) throw notFound('target group', id)
  return { ...presentTargetGroup(row), health: (await readTargetHealth()).get(row.id) ?? null }
}

/** Inside the caller's transaction: inserted and audited; the caller reconciles. */
export async function insertTargetGroup(tx: Tx, input: TargetGroupInput, ctx: AuditContext) {
  const now = new Date().toISOString()
  const row = (await tx
    .insert(targetGroups)
    .values({ ...targetGroupToRow(input), createdAt: now, updatedAt: now })
    .returning()
    .get()
    .catch((err) => _duplicateName(err, input.name)))!
  await writeAudit(ctx, 'target_group_create', { target_group_id: row.id, name: row.name }, tx)
  return row
}

export async function createTargetGroup(input: TargetGroupInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const row = await insertTargetGroup(tx, input, ctx)
    // An unused group changes nothing in the proxy; the builder output stays the same.
    return {
      ...presentTargetGroup(row),
      reconcile: presentReconcile(await reconcileInTransaction(tx, ctx, `target group ${row.name} created`)),
    }
  })
}

export async function updateTargetGroup(id: number, input: TargetGroupInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const current = await tx.select({ id: targetGroups.id }).from(targetGroups).where(eq(targetGroups.id, id)).get()
    if (!current) throw notFound('target group', id)
    const row = (await tx
      .update(targetGroups)
      .set({ ...targetGroupToRow(input), updatedAt: new Date().toISOString() })
      .where(eq(targetGroups.id, id))
      .returning()
      .get()
      .catch((err) => _duplicateName(err, input.name)))!
    await writeAudit(ctx, 'target_group_update', { target_group_id: id, name: row.name }, tx)
    return {
      ...presentTargetGroup(row),
      reconcile: presentReconcile(await reconcileInTransaction(tx, ctx, `target group ${row.name} updated`)),
    }
  })
}

export async function deleteTargetGroup(id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const current = await tx.select().from(targetGroups).where(eq(targetGroups.id, id)).get()
    if (!current) throw notFound('target group', id)
    const host = await tx.select({ id: hosts.id, domain: hosts.domain }).from(hosts).where(eq(hosts.targetGroupId, id)).get()
    if (host) throw conflict(`target group ${id} is used by host ${host.id} (${host.domain}); move that host first`)
    const rule = await tx.select({ id: rules.id, hostId: rules.hostId }).from(rules).where(eq(rules.targetGroupId, id)).get()
    if (rule) throw conflict(`target group ${id} is used by rule ${rule.id} of host ${rule.hostId}; change that rule first`)
    const stream = await streamUsingTargetGroup(tx, id)
    if (stream)
      throw conflict(`target group ${id} is used by stream ${stream.id} ("${stream.name}"); point that stream at another group first`)
    await tx.delete(targetGroups).where(eq(targetGroups.id, id))
    await writeAudit(ctx, 'target_group_delete', { target_group_id: id, name: current.name }, tx)
    await reconcileInTransaction(tx, ctx, `target group ${current.name} deleted`)
  })
}
