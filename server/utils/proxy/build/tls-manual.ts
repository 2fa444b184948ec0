import type { HostSnapshot, Json, ProxySnapshot } from './types'

/** Uploaded certificates as files the proxy loads (never inline PEM: GET /config/ would show the key). */
export function buildManualCertificates(snapshot: ProxySnapshot, hosts: HostSnapshot[]): { loadFiles: Json[]; skipNames: string[] } {
  const byHost = new Map(snapshot.manualCerts.map((c) => [c.hostId, c]))
  const loadFiles: Json[] = []
  const skipNames: string[] = []
  for (const host of hosts) {
    if (host.tls_mode !== 'manual') continue
    const cert = byHost.get(host.id)
    if (!cert) continue
    loadFiles.push({ certificate: cert.certFile, key: cert.keyFile, tags: [`panel-host-${host.id}`] })
    skipNames.push(host.domain, ...host.aliases)
  }
  return { loadFiles, skipNames }
}
