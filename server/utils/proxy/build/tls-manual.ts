import type { HostSnapshot, Json, ProxySnapshot } from './types'

export function manualCertTag(hostId: number): string {
  return `panel-host-${hostId}`
}

/**
 * Uploaded certificates inline in the configuration (`load_pem`), so every node
 * gets them with the push and none needs a folder shared with the panel. The
 * key is therefore in the pushed JSON, like DNS credentials: whatever stores or
 * shows a pushed configuration (revisions, the dry-run diff, a node's refusal)
 * redacts it through the registered secret sources (core/redact.ts,
 * manualCertKeySecrets), and the proxy's admin API, which answers it, is
 * reachable only by the panel (docs/security.md). Also the names of manual hosts for
 * `automatic_https.skip_certificates`, so the proxy never asks an ACME CA for them.
 * A manual host without a certificate keeps its names skipped (its handshakes
 * fail) rather than falling back silently to a public CA; a warning says so.
 */
export function buildManualCertificates(
  snapshot: ProxySnapshot,
  hosts: HostSnapshot[],
  warnings: string[] = [],
): { loadPem: Json[]; skipNames: string[] } {
  const byHost = new Map<number, ProxySnapshot['manualCerts'][number]>()
  for (const c of [...snapshot.manualCerts].sort((a, b) => a.hostId - b.hostId)) if (!byHost.has(c.hostId)) byHost.set(c.hostId, c)
  const loadPem: Json[] = []
  const skipNames: string[] = []
  for (const host of hosts) {
    if (host.tls_mode !== 'manual') continue
    skipNames.push(host.domain, ...host.aliases)
    const cert = byHost.get(host.id)
    if (!cert) {
      warnings.push(`host ${host.domain}: tls_mode is manual but no certificate is stored; HTTPS for it will fail until one is uploaded`)
      continue
    }
    loadPem.push({ certificate: cert.certificatePem, key: cert.keyPem, tags: [manualCertTag(host.id)] })
  }
  return { loadPem, skipNames }
}
