import { AsyncLocalStorage } from 'node:async_hooks'
import { gunzipSync, gzipSync } from 'node:zlib'
import { desc, eq, lt, lte } from 'drizzle-orm'
import { configRevisions } from '../../../../db/schema'
import { getDb, writeTransaction, type Tx } from '../../core/db'
import { conflict, notFound } from '../../core/errors'
import { writeAudit, type AuditContext } from '../../core/audit'
import { getSetting } from '../../core/settings'
import { knownSecrets, makeRedactor } from '../../core/redact'
import { logger } from '../../core/log'
import { withEngineFiles } from '../../security/engine-files'
import { syncTrueDetectProfiles } from '../../security/profiles'
import { writeAppsecPlugin } from '../../security/appsec'
import { collectDesiredState, diffDesiredState, restoreDesiredState, summariseChanges, type DesiredState } from './desired-state'
import { diffConfigs } from './config-diff'
import { presentReconcile, reconcileInTransaction } from '../sync/reconcile'

// Revisions of the pushed proxy configuration (docs/revisions.md). The
// reconciler calls recordRevision inside the mutation's transaction each time
// the proxy accepted a configuration other than the one it held, so a revision
// exists exactly when the change committed.

type RevisionRow = typeof configRevisions.$inferSelect

// Stored gzipped: configurations of many hosts are large and many revisions are kept.
const _pack = (json: string) => gzipSync(json)
const _unpack = <T>(blob: Buffer | Uint8Array | ArrayBuffer): T =>
  JSON.parse(gunzipSync(Buffer.from(blob as ArrayBuffer)).toString('utf8')) as T

/** Set while a revert reconciles, so the revision it produces names its origin. */
const _revertingTo = new AsyncLocalStorage<number>()

export function presentRevision(row: Omit<RevisionRow, 'desiredState' | 'config'>) {
  return {
    id: row.id,
    created_at: row.createdAt,
    author: row.author,
    api_token_id: row.apiTokenId,
    reason: row.reason,
    summary: row.summary as ReturnType<typeof summariseChanges>,
    config_hash: row.configHash,
    reverted_to: row.revertedTo,
  }
}

/** One revision for what was just pushed: its desired state, what changed since the previous one, the config with secrets masked. */
export async function recordRevision(tx: Tx, ctx: AuditContext, pushed: { reason: string; hash: string; json: string }): Promise<void> {
  const desired = await collectDesiredState(tx)
  const previous = await tx.select().from(configRevisions).orderBy(desc(configRevisions.id)).limit(1).get()
  const summary = summariseChanges(diffDesiredState(previous ? _unpack<DesiredState>(previous.desiredState) : {}, desired))
  const redact = makeRedactor(await knownSecrets(tx))
  const row = (await tx
    .insert(configRevisions)
    .values({
      createdAt: new Date().toISOString(),
      author: ctx.actor,
      apiTokenId: ctx.apiToken?.id ?? null,
      reason: pushed.reason,
      summary,
      desiredState: _pack(JSON.stringify(desired)),
      configHash: pushed.hash,
      config: _pack(redact(pushed.json)),
      revertedTo: _revertingTo.getStore() ?? null,
    })
    .returning({ id: configRevisions.id })
    .get())!
  const keep = await getSetting<number>('revisions.retention_count', tx)
  await tx.delete(configRevisions).where(lte(configRevisions.id, row.id - keep))
}

export async function listRevisions() {
  const rows = await getDb()
    .select({
      id: configRevisions.id,
      createdAt: configRevisions.createdAt,
      author: configRevisions.author,
      apiTokenId: configRevisions.apiTokenId,
      reason: configRevisions.reason,
      summary: configRevisions.summary,
      configHash: configRevisions.configHash,
      revertedTo: configRevisions.revertedTo,
    })
    .from(configRevisions)
    .orderBy(desc(configRevisions.id))
  return rows.map(presentRevision)
}

async function _revision(id: number): Promise<RevisionRow> {
  const row = await getDb().select().from(configRevisions).where(eq(configRevisions.id, id)).get()
  if (!row) throw notFound('revision', id)
  return row
}

export async function getRevision(id: number) {
  const row = await _revision(id)
  return { ...presentRevision(row), desired_state: _unpack<DesiredState>(row.desiredState), config: _unpack<unknown>(row.config) }
}

/** From one revision to another: objects and fields, and the configuration (both stored with secrets masked). */
export async function diffRevisions(fromId: number, toId: number) {
  const [from, to] = [await _revision(fromId), await _revision(toId)]
  const config = diffConfigs(_unpack(from.config), _unpack(to.config))
  return {
    from: presentRevision(from),
    to: presentRevision(to),
    changes: diffDesiredState(_unpack<DesiredState>(from.desiredState), _unpack<DesiredState>(to.desiredState)),
    config_diff: config.changes,
    config_diff_truncated: config.truncated,
  }
}

/** What a restore writes back, and how it is audited and named: a revert or an undo decides. */
interface _RestorePlan {
  state: RevisionRow
  audit: 'revision_revert' | 'revision_undo'
  auditFields: Record<string, unknown>
  reason: string
}

/** Restores the planned revision's desired state and reconciles, in one transaction. */
async function _restore(ctx: AuditContext, plan: (tx: Tx) => Promise<_RestorePlan>) {
  return withEngineFiles(async () => {
    const answer = await writeTransaction(async (tx) => {
      const p = await plan(tx)
      const newestBefore = (await tx
        .select({ id: configRevisions.id })
        .from(configRevisions)
        .orderBy(desc(configRevisions.id))
        .limit(1)
        .get())!.id
      await restoreDesiredState(tx, _unpack<DesiredState>(p.state.desiredState), p.state.id)
      await writeAudit(ctx, p.audit, p.auditFields, tx)
      const outcome = await _revertingTo.run(p.state.id, () => reconcileInTransaction(tx, ctx, p.reason))
      const newest = await tx.select().from(configRevisions).orderBy(desc(configRevisions.id)).limit(1).get()
      return {
        restored: p.state.id,
        revision: newest && newest.id > newestBefore ? presentRevision(newest) : null,
        reconcile: presentReconcile(outcome),
      }
    })
    // The engine's files follow the restored state, as after a host save or a threshold change:
    // true_detect_mode profiles, and the AppSec thresholds (settings part).
    await syncTrueDetectProfiles().catch((err) => logger.error(`true_detect_mode profiles: ${(err as Error).message}`))
    await writeAppsecPlugin().catch((err) => logger.error(`AppSec thresholds file: ${(err as Error).message}`))
    return answer
  })
}

async function _revisionIn(tx: Tx, id: number): Promise<RevisionRow> {
  const row = await tx.select().from(configRevisions).where(eq(configRevisions.id, id)).get()
  if (!row) throw notFound('revision', id)
  return row
}

/**
 * Restores a revision's desired state and reconciles, in one transaction: a
 * state that refers to a deleted certificate or credential is refused (409),
 * a proxy rejection rolls everything back (502). The revert is audited and,
 * when the configuration changes, becomes a new revision naming its origin.
 */
export async function revertToRevision(id: number, ctx: AuditContext) {
  const { restored: _restored, ...out } = await _restore(ctx, async (tx) => ({
    state: await _revisionIn(tx, id),
    audit: 'revision_revert',
    auditFields: { revision_id: id },
    reason: `revert to revision ${id}`,
  }))
  return { reverted_to: id, ...out }
}

/**
 * Undoes a revision: restores the state just before it, which is the previous
 * revision's desired state (docs/revisions.md). Undoing an older revision also
 * takes back the ones after it, since the whole state goes back; the preview
 * (dry run) shows that. The oldest revision kept has no stored state before
 * it (the first push, or the ones before it dropped by retention): refused
 * with 409 rather than guessing an empty configuration.
 */
export async function undoRevision(id: number, ctx: AuditContext) {
  const { restored, ...out } = await _restore(ctx, async (tx) => {
    const target = await _revisionIn(tx, id)
    const previous = await tx
      .select()
      .from(configRevisions)
      .where(lt(configRevisions.id, id))
      .orderBy(desc(configRevisions.id))
      .limit(1)
      .get()
    if (!previous)
      throw conflict(
        `revision ${id} cannot be undone: it is the oldest revision the panel keeps, so the state before it is not stored; use "Restore this version" on a revision instead`,
      )
    return {
      state: previous,
      audit: 'revision_undo',
      auditFields: { revision_id: id, restored_revision_id: previous.id },
      reason: `Undo of revision ${id} (${target.reason})`,
    }
  })
  return { undone: id, reverted_to: restored, ...out }
}
