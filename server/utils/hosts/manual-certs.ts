import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { hosts, manualCerts } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { notFound } from '../core/errors'
import { getConfig } from '../core/config'
import { getSecretsBox } from '../core/secrets'
import { writeAudit, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { manualCertKeyOwner } from './manual-cert-pems'
import { validateCertificateUpload, type ValidatedUpload } from './cert-validation'
import { z } from 'zod'

type Row = typeof manualCerts.$inferSelect
const _keyOwner = manualCertKeyOwner

export function presentManualCert(row: Row, domain: string) {
  return {
    host_id: row.hostId,
    domain,
    subject: row.subject,
    issuer: row.issuer,
    sans: row.sans,
    not_before: row.notBefore,
    not_after: row.notAfter,
    fingerprint_sha256: row.fingerprintSha256,
    has_chain: !!row.chainPem,
    uploaded_at: row.uploadedAt,
    uploaded_by: row.uploadedBy,
  }
}

/** The uploaded private keys (PEM), for redaction. */
export async function manualCertKeySecrets(exec: Executor): Promise<string[]> {
  const rows = await exec.select({ hostId: manualCerts.hostId, keySealed: manualCerts.keySealed }).from(manualCerts)
  return rows.map((r) => getSecretsBox().open(r.keySealed, _keyOwner(r.hostId)))
}

async function _hostOf(exec: Executor, hostId: number) {
  const host = await exec.select().from(hosts).where(eq(hosts.id, hostId)).get()
  if (!host) throw notFound('host', hostId)
  return host
}

export async function listManualCerts() {
  const rows = await getDb()
    .select({ c: manualCerts, domain: hosts.domain })
    .from(manualCerts)
    .innerJoin(hosts, eq(hosts.id, manualCerts.hostId))
    .orderBy(manualCerts.hostId)
  return rows.map((r) => presentManualCert(r.c, r.domain))
}

export async function getManualCert(hostId: number) {
  const host = await _hostOf(getDb(), hostId)
  const row = await getDb().select().from(manualCerts).where(eq(manualCerts.hostId, hostId)).get()
  if (!row) throw notFound('manual certificate for host', hostId)
  return presentManualCert(row, host.domain)
}

/** Certificate + chain for download; the key is never part of it. */
export async function readManualCertPem(hostId: number): Promise<{ domain: string; pem: string }> {
  const host = await _hostOf(getDb(), hostId)
  const row = await getDb().select().from(manualCerts).where(eq(manualCerts.hostId, hostId)).get()
  if (!row) throw notFound('manual certificate for host', hostId)
  return { domain: host.domain, pem: row.certPem + (row.chainPem ?? '') }
}

/**
 * Inside the caller's transaction: stores a validated certificate for the host,
 * sets tls_mode manual and audits. The push that follows reads the certificate
 * and key from the transaction into the configuration (load_pem), so a refusal
 * rolls back everything with the rows.
 */
export async function installManualCertInTransaction(
  tx: Tx,
  host: { id: number; domain: string },
  valid: ValidatedUpload,
  ctx: AuditContext,
): Promise<{ row: Row }> {
  const hostId = host.id
  const now = new Date().toISOString()
  const row: Row = {
    hostId,
    subject: valid.metadata.subject,
    issuer: valid.metadata.issuer,
    sans: valid.metadata.sans,
    notBefore: valid.metadata.not_before,
    notAfter: valid.metadata.not_after,
    fingerprintSha256: valid.metadata.fingerprint_sha256,
    certPem: valid.leafPem,
    chainPem: valid.chainPem,
    keySealed: getSecretsBox().seal(valid.keyPem, _keyOwner(hostId)),
    uploadedAt: now,
    uploadedBy: ctx.actor,
  }
  await tx.insert(manualCerts).values(row).onConflictDoUpdate({ target: manualCerts.hostId, set: row })
  await tx.update(hosts).set({ tlsMode: 'manual', updatedAt: now }).where(eq(hosts.id, hostId))
  await writeAudit(
    ctx,
    'manual_cert_upload',
    { host_id: hostId, domain: host.domain, fingerprint_sha256: row.fingerprintSha256, not_after: row.notAfter },
    tx,
  )
  return { row }
}

export async function uploadManualCert(
  hostId: number,
  parts: { certPem: string; keyPem: string; chainPem?: string | null },
  ctx: AuditContext,
) {
  const host = await _hostOf(getDb(), hostId)
  const valid = validateCertificateUpload(parts, [host.domain, ...host.aliases])
  return writeTransaction(async (tx) => {
    const { row } = await installManualCertInTransaction(tx, host, valid, ctx)
    const outcome = await reconcileInTransaction(tx, ctx, `manual certificate for ${host.domain} uploaded`)
    return { ...presentManualCert(row, host.domain), reconcile: presentReconcile(outcome) }
  })
}

export async function deleteManualCert(hostId: number, revert: 'auto' | 'none', ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const host = await _hostOf(tx, hostId)
    const row = await tx.select().from(manualCerts).where(eq(manualCerts.hostId, hostId)).get()
    if (!row) throw notFound('manual certificate for host', hostId)
    await tx.delete(manualCerts).where(eq(manualCerts.hostId, hostId))
    await tx.update(hosts).set({ tlsMode: revert, updatedAt: new Date().toISOString() }).where(eq(hosts.id, hostId))
    await writeAudit(ctx, 'manual_cert_delete', { host_id: hostId, domain: host.domain, revert }, tx)
    return reconcileInTransaction(tx, ctx, `manual certificate for ${host.domain} removed`)
  })
}

/** The names earlier versions wrote in PANEL_CERTS_DIR for the proxy: host-<id>.crt and host-<id>.key. */
const _LEGACY_FILE = /^host-\d+\.(crt|key)$/

/**
 * At boot: removes the certificate and key files earlier versions wrote to
 * PANEL_CERTS_DIR for the proxy to load. The configuration carries them now
 * (load_pem), and a private key left on a shared volume is one more copy to
 * protect. Only the panel's own file names are touched; a folder that does not
 * exist is nothing to do.
 */
export function removeLegacyManualCertFiles(): void {
  const dir = getConfig().certsDir
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return
  }
  const removed = names.filter((n) => _LEGACY_FILE.test(n))
  for (const n of removed) rmSync(join(dir, n), { force: true })
  if (removed.length)
    logger.info(`removed ${removed.length} uploaded-certificate files from ${dir}: the proxy configuration carries them now`)
}

/** DELETE /api/manual-certs/{host_id}: the TLS mode the host takes afterwards. */
export const manualCertDeleteQuery = z.strictObject({
  revert: z.enum(['auto', 'none'], { message: 'must be "auto" or "none"' }).default('auto').describe('TLS mode afterwards'),
})
