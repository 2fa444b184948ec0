import type { HostSnapshot, Json, ProxySnapshot } from './types'

export function manualCertTag(hostId: number): string {
  return `panel-host-${hostId}`
}

/**
 * Uploaded certificates as files the proxy loads (never inline PEM: GET /config/
 * would show the key), and the names of manual hosts for
 * `automatic_https.skip_certificates`, so the proxy never asks an ACME CA for them.
 * A manual host without a certificate keeps its names skipped (its handshakes
 * fail) rather than falling back silently to a public CA; a warning says so.
 */
export function buildManualCertificates(
  snapshot: ProxySnapshot,
  hosts: HostSnapshot[],
  warnings: string[] = [],
): { loadFiles: Json[]; skipNames: string[] } {
  const byHost = new Map<number, ProxySnapshot['manualCerts'][number]>()
  for (const c of [...snapshot.manualCerts].sort((a, b) => a.hostId - b.hostId || a.certFile.localeCompare(b.certFile)))
    if (!byHost.has(c.hostId)) byHost.set(c.hostId, c)
  const loadFiles: Json[] = []
  const skipNames: string[] = []
  for (const host of hosts) {
    if (host.tls_mode !== 'manual') continue
    skipNames.push(host.domain, ...host.aliases)
    const cert = byHost.get(host.id)
    if (!cert) {
      warnings.push(`host ${host.domain}: tls_mode is manual but no certificate is stored; HTTPS for it will fail until one is uploaded`)
      continue
    }
    loadFiles.push({ certificate: cert.certFile, key: cert.keyFile, tags: [manualCertTag(host.id)] })
  }
  return { loadFiles, skipNames }
}
