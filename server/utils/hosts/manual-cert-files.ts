import { join } from 'node:path'
import { manualCerts } from '../../../db/schema'
import type { Executor } from '../core/db'
import { getConfig } from '../core/config'

// Where uploaded certificates live on disk, and what the proxy snapshot reads of them.
// Imports nothing from proxy/: the snapshot depends on hosts/, never the reverse.

export interface ManualCertPaths {
  hostId: number
  certFile: string
  keyFile: string
}

/** Leaf+chain and key file names of one host, in the panel's and the proxy's view of the folder. */
export const manualCertFileNames = (hostId: number) => ({ cert: `host-${hostId}.crt`, key: `host-${hostId}.key` })

/** The paths as the proxy sees them (its certsDir may be a different mount of the same volume). */
export async function readManualCertPaths(exec: Executor): Promise<ManualCertPaths[]> {
  const dir = getConfig().proxy.certsDir
  return (await exec.select({ hostId: manualCerts.hostId }).from(manualCerts)).map(({ hostId }) => {
    const names = manualCertFileNames(hostId)
    return { hostId, certFile: join(dir, names.cert), keyFile: join(dir, names.key) }
  })
}
