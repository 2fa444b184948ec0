import { manualCerts } from '../../../db/schema'
import type { Executor } from '../core/db'
import { getSecretsBox } from '../core/secrets'

// What the proxy snapshot reads of the uploaded certificates: the PEM itself,
// pushed with the configuration (the TLS app's load_pem), so that no node needs
// a folder shared with the panel. Imports nothing from proxy/: the snapshot
// depends on hosts/, never the reverse.

export interface ManualCertPem {
  hostId: number
  /** The leaf followed by its chain, as the proxy presents them. */
  certificatePem: string
  /** The private key, opened from its sealed column only into the snapshot (as DNS credentials are). */
  keyPem: string
}

/** The secrets box owner of a host's sealed key (binds the sealed value to its row). */
export const manualCertKeyOwner = (hostId: number) => `manual_certs/${hostId}/key`

export async function readManualCertPems(exec: Executor): Promise<ManualCertPem[]> {
  const rows = await exec
    .select({ hostId: manualCerts.hostId, certPem: manualCerts.certPem, chainPem: manualCerts.chainPem, keySealed: manualCerts.keySealed })
    .from(manualCerts)
  return rows.map((r) => ({
    hostId: r.hostId,
    certificatePem: r.certPem + (r.chainPem ?? ''),
    keyPem: getSecretsBox().open(r.keySealed, manualCertKeyOwner(r.hostId)),
  }))
}
