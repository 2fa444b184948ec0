import { X509Certificate } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { inArray } from 'drizzle-orm'
import { hosts, manualCerts } from '../../../db/schema'
import { getDb, type Executor } from '../core/db'
import { getConfig } from '../core/config'
import { describeCertificate } from './cert-validation'
import { lastAcmeFailures, type AcmeFailure } from './acme-outcomes'
import { readStorageCertificates } from '../proxy/nodes/client'
import { logger } from '../core/log'
import { redactSecrets } from '../core/redact'

// Expiry of every certificate the proxy serves: uploaded ones from their
// metadata, ACME ones from the storage the panel pushes: through node 1's
// admin API (GET /panel/storage/certificates) when the build has the storage
// module, so a Redis storage needs no folder; else (or when the node cannot
// say) read (read-only) from the proxy's storage folder.

/** `last_failure`: the proxy's last attempt for one of the host's names failed (ACME only; null once one succeeds). */
export interface CertificateSummary {
  source: 'acme' | 'manual'
  not_after: string | null
  issuer: string | null
  last_failure: AcmeFailure | null
}
type HostRow = typeof hosts.$inferSelect

const _SCAN_EVERY_MS = 10_000
let _acmeCache: { atMs: number; byName: Map<string, { not_after: string; issuer: string }> } | undefined

/** name -> the newest certificate in `<PROXY_DATA_DIR>/certificates/<issuer>/<name>/<name>.crt`. */
export function scanAcmeCertificates(storageRoot: string): Map<string, { not_after: string; issuer: string }> {
  const byName = new Map<string, { not_after: string; issuer: string }>()
  const root = join(storageRoot, 'certificates')
  if (!existsSync(root)) return byName
  for (const issuerDir of readdirSync(root)) {
    let names: string[]
    try {
      names = readdirSync(join(root, issuerDir))
    } catch {
      continue
    }
    for (const name of names) {
      try {
        const meta = describeCertificate(new X509Certificate(readFileSync(join(root, issuerDir, name, `${name}.crt`))))
        // Caddy stores *.example.com as wildcard_.example.com.
        const served = name.replace(/^wildcard_/, '*')
        const known = byName.get(served)
        if (!known || known.not_after < meta.not_after) byName.set(served, { not_after: meta.not_after, issuer: meta.issuer })
      } catch {
        /* a half-written or foreign file: skip */
      }
    }
  }
  return byName
}

type _ByName = Map<string, { not_after: string; issuer: string }>
let _acmeReading: Promise<_ByName> | undefined

/** The issuer's common name, as the folder scan gives it (the node may answer a whole distinguished name). */
const _issuerName = (issuer: string) => /(?:^|[,/]\s*)CN=([^,/]+)/.exec(issuer)?.[1]?.trim() ?? issuer

/** name -> the newest certificate in the storage node 1 runs; null when it cannot say (no module, storage or node down). */
async function _fromNode(): Promise<_ByName | null> {
  const cfg = getConfig()
  if (!cfg.proxy.modules.includes('storage')) return null
  const r = await readStorageCertificates(cfg.proxy.adminUrl, { timeoutMs: 2_000 })
  if (r.outcome === 'absent') return null
  if (r.outcome === 'failed') {
    logger.warn(
      `certificate expiry: node 1 could not list its storage (${await redactSecrets(r.error)}); ${cfg.proxy.dataDir ? 'reading PROXY_DATA_DIR' : 'no expiry shown'}`,
    )
    return null
  }
  const byName: _ByName = new Map()
  for (const c of r.certificates) {
    const known = byName.get(c.name)
    const notAfter = new Date(c.not_after).toISOString()
    if (!known || known.not_after < notAfter) byName.set(c.name, { not_after: notAfter, issuer: _issuerName(c.issuer ?? '') })
  }
  return byName
}

async function _readAcme(): Promise<_ByName> {
  const fromNode = await _fromNode()
  if (fromNode) return fromNode
  const root = getConfig().proxy.dataDir
  return root ? scanAcmeCertificates(root) : new Map()
}

/** Read at most every 10 s whatever the source (a failing node is not asked again for every host list); one read at a time. */
async function _acme(): Promise<_ByName> {
  if (_acmeCache && Date.now() - _acmeCache.atMs <= _SCAN_EVERY_MS) return _acmeCache.byName
  _acmeReading ??= _readAcme()
    .catch((err) => {
      logger.warn(`certificate expiry could not be read: ${(err as Error).message}`)
      return new Map() as _ByName
    })
    .then((byName) => {
      _acmeCache = { atMs: Date.now(), byName }
      return byName
    })
    .finally(() => {
      _acmeReading = undefined
    })
  return _acmeReading
}

export async function certificateSummaries(rows: HostRow[], exec: Executor = getDb()): Promise<Map<number, CertificateSummary | null>> {
  const out = new Map<number, CertificateSummary | null>()
  const manualIds = rows.filter((r) => r.tlsMode === 'manual').map((r) => r.id)
  const manual = new Map(
    manualIds.length
      ? (
          await exec
            .select({ hostId: manualCerts.hostId, notAfter: manualCerts.notAfter, issuer: manualCerts.issuer })
            .from(manualCerts)
            .where(inArray(manualCerts.hostId, manualIds))
        ).map((m) => [m.hostId, m])
      : [],
  )
  const anyAcme = rows.some((r) => r.tlsMode === 'auto')
  const acme = anyAcme ? await _acme() : new Map()
  const failureOf = anyAcme ? await lastAcmeFailures(exec) : () => null
  for (const r of rows) {
    if (r.tlsMode === 'none') out.set(r.id, null)
    else if (r.tlsMode === 'manual') {
      const m = manual.get(r.id)
      out.set(r.id, { source: 'manual', not_after: m?.notAfter ?? null, issuer: m?.issuer ?? null, last_failure: null })
    } else {
      const a = acme.get(r.domain)
      out.set(r.id, {
        source: 'acme',
        not_after: a?.not_after ?? null,
        issuer: a?.issuer ?? null,
        last_failure: failureOf([r.domain, ...r.aliases]),
      })
    }
  }
  return out
}

/** Every served certificate with its expiry, for the overview and the expiry notifications. */
export async function listCertificateExpiries(): Promise<Array<{ host_id: number; domain: string } & CertificateSummary>> {
  const rows = await getDb().select().from(hosts)
  const summaries = await certificateSummaries(rows)
  return rows.flatMap((r) => {
    const s = summaries.get(r.id)
    return s ? [{ host_id: r.id, domain: r.domain, ...s }] : []
  })
}
