import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { hosts, manualCerts } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { notFound } from '../core/errors'
import { getConfig } from '../core/config'
import { getSecretsBox } from '../core/secrets'
import { writeAudit, type AuditContext } from '../core/audit'
import { logger } from '../core/log'
import { writeFileAtomically } from '../core/files'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { manualCertFileNames } from './manual-cert-files'
import { validateCertificateUpload, type ValidatedUpload } from './cert-validation'
import { z } from 'zod'

type Row = typeof manualCerts.$inferSelect
const _keyOwner = (hostId: number) => `manual_certs/${hostId}/key`

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

/** Writes leaf+chain and key where the proxy loads them (temp file + rename, key 0600). */
function _writeFiles(row: Pick<Row, 'hostId' | 'certPem' | 'chainPem' | 'keySealed'>): void {
  const dir = getConfig().certsDir
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const names = manualCertFileNames(row.hostId)
  writeFileAtomically(join(dir, names.cert), row.certPem + (row.chainPem ?? ''), 0o644)
  writeFileAtomically(join(dir, names.key), getSecretsBox().open(row.keySealed, _keyOwner(row.hostId)), 0o600)
}

function _removeFiles(hostId: number): void {
  const names = manualCertFileNames(hostId)
  for (const n of [names.cert, names.key]) rmSync(join(getConfig().certsDir, n), { force: true })
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
 * sets tls_mode manual, audits, and writes the files the proxy loads (before
 * the push, which reads them). Returns the row and what puts the previous files
 * back should the transaction roll back.
 */
export async function installManualCertInTransaction(
  tx: Tx,
  host: { id: number; domain: string },
  valid: ValidatedUpload,
  ctx: AuditContext,
): Promise<{ row: Row; undoFiles: () => void }> {
  const hostId = host.id
  const previous = await tx.select().from(manualCerts).where(eq(manualCerts.hostId, hostId)).get()
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
  _writeFiles(row)
  return {
    row,
    undoFiles: () => {
      if (previous) _writeFiles(previous)
      else _removeFiles(hostId)
    },
  }
}

export async function uploadManualCert(
  hostId: number,
  parts: { certPem: string; keyPem: string; chainPem?: string | null },
  ctx: AuditContext,
) {
  const host = await _hostOf(getDb(), hostId)
  const valid = validateCertificateUpload(parts, [host.domain, ...host.aliases])
  return writeTransaction(async (tx) => {
    // The proxy reads the files during /load, so they are in place first; a
    // rejection puts the previous files back along with the rolled-back rows.
    const { row, undoFiles } = await installManualCertInTransaction(tx, host, valid, ctx)
    try {
      const outcome = await reconcileInTransaction(tx, ctx, `manual certificate for ${host.domain} uploaded`, { force: true })
      return { ...presentManualCert(row, host.domain), reconcile: presentReconcile(outcome) }
    } catch (err) {
      undoFiles()
      throw err
    }
  })
}

export async function deleteManualCert(hostId: number, revert: 'auto' | 'none', ctx: AuditContext) {
  const outcome = await writeTransaction(async (tx) => {
    const host = await _hostOf(tx, hostId)
    const row = await tx.select().from(manualCerts).where(eq(manualCerts.hostId, hostId)).get()
    if (!row) throw notFound('manual certificate for host', hostId)
    await tx.delete(manualCerts).where(eq(manualCerts.hostId, hostId))
    await tx.update(hosts).set({ tlsMode: revert, updatedAt: new Date().toISOString() }).where(eq(hosts.id, hostId))
    await writeAudit(ctx, 'manual_cert_delete', { host_id: hostId, domain: host.domain, revert }, tx)
    return reconcileInTransaction(tx, ctx, `manual certificate for ${host.domain} removed`)
  })
  _removeFiles(hostId) // the proxy no longer references them
  return outcome
}

/** At boot the files are re-derived from the database (a fresh shared volume, a restore). */
export async function syncManualCertFiles(): Promise<void> {
  for (const row of await getDb().select().from(manualCerts)) {
    const certPath = join(getConfig().certsDir, manualCertFileNames(row.hostId).cert)
    if (existsSync(certPath) && readFileSync(certPath, 'utf8') === row.certPem + (row.chainPem ?? '')) continue
    _writeFiles(row)
    logger.info(`rewrote the certificate files of host ${row.hostId} from the database`)
  }
}

/** DELETE /api/manual-certs/{host_id}: the TLS mode the host takes afterwards. */
export const manualCertDeleteQuery = z.strictObject({
  revert: z.enum(['auto', 'none'], { message: 'must be "auto" or "none"' }).default('auto').describe('TLS mode afterwards'),
})
