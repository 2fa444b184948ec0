import { eq, inArray, and, ne } from 'drizzle-orm'
import { hostNames, hosts, targetGroups, users, wafExclusions } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { badRequest, conflict, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { presentReconcile, reconcileInTransaction, type ReconcileOutcome } from '../proxy/sync/reconcile'
import { HOST_DEFAULTS, resolveHostFields, type HostInput } from './schemas'
import { hostFromRow, hostToRow } from './records'
import { assertHostKindFields } from './kinds'
import { assertDnsProviderUsable } from './dns-providers'
import { findDnsProvider } from './dns-catalogue'
import { certificateSummaries } from './cert-expiry'
import { syncTrueDetectProfiles } from '../security/profiles'
import { withEngineFiles } from '../security/engine-files'
import { logger } from '../core/log'
import { presentHost } from './present'
import { detachDeletedHost } from './access-lists'
import { readTargetHealth } from '../ops/target-health'
import { streamSniClash } from '../streams/conflicts'
import { invalidateHostIdentityRules } from '../auth/host-identity'

type HostRow = typeof hosts.$inferSelect
export type HostWithReconcile = ReturnType<typeof presentHost> & { reconcile: ReturnType<typeof presentReconcile> }

async function _present(row: HostRow, exec: Executor = getDb()) {
  return presentHost(row, (await certificateSummaries([row], exec)).get(row.id) ?? null)
}

async function _withReconcile(row: HostRow, outcome: ReconcileOutcome, exec: Executor): Promise<HostWithReconcile> {
  return { ...(await _present(row, exec)), reconcile: presentReconcile(outcome) }
}

// A redirect, static or maintenance host may have no target group, and so no health.
const _groupHealth = <T>(health: Map<number, T>, groupId: number | null): T | null =>
  groupId === null ? null : (health.get(groupId) ?? null)

/** Reads carry the health of the host's target group (its targets, ops/target-health.ts). */
export async function listHosts() {
  const rows = await getDb().select().from(hosts).orderBy(hosts.id)
  const [certificates, health] = await Promise.all([certificateSummaries(rows), readTargetHealth()])
  return rows.map((r) => ({ ...presentHost(r, certificates.get(r.id) ?? null), health: _groupHealth(health, r.targetGroupId) }))
}

export async function getHost(id: number) {
  const row = await getDb().select().from(hosts).where(eq(hosts.id, id)).get()
  if (!row) throw notFound('host', id)
  return { ...(await _present(row)), health: _groupHealth(await readTargetHealth(), row.targetGroupId) }
}

async function _assertNamesFree(tx: Tx, names: string[], exceptHostId?: number): Promise<void> {
  const taken = await tx
    .select()
    .from(hostNames)
    .where(
      exceptHostId === undefined ? inArray(hostNames.name, names) : and(inArray(hostNames.name, names), ne(hostNames.hostId, exceptHostId)),
    )
  if (taken.length) throw conflict(`domain: ${taken[0]!.name} is already used by host ${taken[0]!.hostId}`)
  // A stream routing one of these names by TLS server name would take the host's connections (docs/streams.md).
  const stream = await streamSniClash(tx, names)
  if (stream) throw conflict(stream)
}

async function _validateReferences(tx: Tx, input: HostInput, currentTlsMode?: HostRow['tlsMode']): Promise<void> {
  const names = [input.domain, ...input.aliases]
  if (new Set(names).size !== names.length) throw badRequest('aliases: must not repeat the domain or each other')
  if (input.target_group_id !== null) {
    const group = await tx.select({ id: targetGroups.id }).from(targetGroups).where(eq(targetGroups.id, input.target_group_id)).get()
    if (!group) throw badRequest(`target_group_id: target group ${input.target_group_id} does not exist`)
  }
  if (input.tls_dns_provider !== null && !findDnsProvider(input.tls_dns_provider))
    throw badRequest(`tls_dns_provider: "${input.tls_dns_provider}" is not in the catalogue; GET /api/dns-providers lists them`)
  if (input.tls_mode === 'auto' && input.tls_challenge === 'dns') await assertDnsProviderUsable(tx, input.tls_dns_provider, names)
  const wildcard = names.find((n) => n.startsWith('*.'))
  if (wildcard && input.tls_mode === 'auto' && input.tls_challenge !== 'dns')
    throw badRequest(`domain: ${wildcard} is a wildcard; its certificate can only be obtained with tls_challenge "dns"`)
  const allowed = input.auth_allowed_users ?? []
  if (allowed.length) {
    const found = new Set((await tx.select({ id: users.id }).from(users).where(inArray(users.id, allowed))).map((u) => u.id))
    const missing = allowed.find((id) => !found.has(id))
    if (missing !== undefined) throw badRequest(`auth_allowed_users: user ${missing} does not exist; GET /api/users lists them`)
  }
  if (input.tls_mode === 'manual' && currentTlsMode !== 'manual')
    throw badRequest('tls_mode: "manual" is set by uploading a certificate (POST /api/manual-certs/{host_id}), not directly')
}

async function _writeNames(tx: Tx, hostId: number, input: HostInput): Promise<void> {
  await tx.delete(hostNames).where(eq(hostNames.hostId, hostId))
  await tx.insert(hostNames).values([input.domain, ...input.aliases].map((name) => ({ name, hostId })))
}

/**
 * Host changes also decide the engine's true_detect_mode profiles (written after
 * commit). Commit and write hold the engine-files lock together, so the drift
 * detector never sees the one without the other.
 */
function _afterHostChange<T>(change: () => Promise<T>): Promise<T> {
  return withEngineFiles(async () => {
    const result = await change()
    // After the commit: a ForwardAuth check between the two would otherwise keep the old rules.
    invalidateHostIdentityRules()
    await syncTrueDetectProfiles().catch((err) => logger.error(`true_detect_mode profiles: ${(err as Error).message}`))
    return result
  })
}

/** Inside the caller's transaction: checked, inserted with its names and audited; the caller reconciles (the importers push once for many). */
export async function insertHost(tx: Tx, input: HostInput, ctx: AuditContext): Promise<HostRow> {
  await _validateReferences(tx, input)
  const fields = resolveHostFields(input, HOST_DEFAULTS)
  assertHostKindFields(fields)
  await _assertNamesFree(tx, [input.domain, ...input.aliases])
  const now = new Date().toISOString()
  const row = (await tx
    .insert(hosts)
    .values({ ...hostToRow(fields), createdAt: now, updatedAt: now })
    .returning()
    .get())!
  await _writeNames(tx, row.id, input)
  await writeAudit(ctx, 'host_create', { host_id: row.id, domain: row.domain }, tx)
  return row
}

export async function createHost(input: HostInput, ctx: AuditContext): Promise<HostWithReconcile> {
  return _afterHostChange(() =>
    writeTransaction(async (tx) => {
      const row = await insertHost(tx, input, ctx)
      return _withReconcile(row, await reconcileInTransaction(tx, ctx, `host ${row.domain} created`), tx)
    }),
  )
}

/** Full replace; optional fields (booleans, WAF settings) left out keep their stored values. */
export async function updateHost(id: number, input: HostInput, ctx: AuditContext): Promise<HostWithReconcile> {
  return _afterHostChange(() =>
    writeTransaction(async (tx) => {
      const current = await tx.select().from(hosts).where(eq(hosts.id, id)).get()
      if (!current) throw notFound('host', id)
      await _validateReferences(tx, input, current.tlsMode)
      await _assertNamesFree(tx, [input.domain, ...input.aliases], id)
      // Fields left out of the request keep their stored values.
      const fields = resolveHostFields(input, hostFromRow(current))
      assertHostKindFields(fields)
      const row = (await tx
        .update(hosts)
        .set({ ...hostToRow(fields), updatedAt: new Date().toISOString() })
        .where(eq(hosts.id, id))
        .returning()
        .get())!
      await _writeNames(tx, id, input)
      await writeAudit(ctx, 'host_update', { host_id: id, domain: row.domain }, tx)
      return _withReconcile(row, await reconcileInTransaction(tx, ctx, `host ${row.domain} updated`), tx)
    }),
  )
}

export async function toggleHost(id: number, ctx: AuditContext): Promise<HostWithReconcile> {
  return _afterHostChange(() =>
    writeTransaction(async (tx) => {
      const current = await tx.select().from(hosts).where(eq(hosts.id, id)).get()
      if (!current) throw notFound('host', id)
      const row = (await tx
        .update(hosts)
        .set({ enabled: !current.enabled, updatedAt: new Date().toISOString() })
        .where(eq(hosts.id, id))
        .returning()
        .get())!
      await writeAudit(ctx, 'host_toggle', { host_id: id, domain: row.domain, enabled: row.enabled }, tx)
      return _withReconcile(row, await reconcileInTransaction(tx, ctx, `host ${row.domain} ${row.enabled ? 'enabled' : 'disabled'}`), tx)
    }),
  )
}

export async function deleteHost(id: number, ctx: AuditContext): Promise<ReconcileOutcome> {
  return _afterHostChange(() =>
    writeTransaction(async (tx) => {
      const current = await tx.select().from(hosts).where(eq(hosts.id, id)).get()
      if (!current) throw notFound('host', id)
      await tx.delete(hosts).where(eq(hosts.id, id))
      // The schema says ON DELETE CASCADE, but SQLite enforces it only with foreign_keys on.
      await tx.delete(wafExclusions).where(eq(wafExclusions.hostId, id))
      await detachDeletedHost(tx, id)
      await writeAudit(ctx, 'host_delete', { host_id: id, domain: current.domain }, tx)
      return reconcileInTransaction(tx, ctx, `host ${current.domain} deleted`)
    }),
  )
}
