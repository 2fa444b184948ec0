import { eq } from 'drizzle-orm'
import { hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { badRequest, notFound } from '../core/errors'
import type { AuditContext } from '../core/audit'
import { checkDnsProviderForHost, describeDnsCheck, type HostDnsCheck } from '../proxy/dns-check'

// The host screen's view of its DNS provider's check (docs/dns-check.md): the
// provider's last check, and "Check now", which runs the Test button's check in
// the zone the host's orders write.

async function _providerOf(id: number): Promise<{ provider: string; domain: string }> {
  const host = await getDb().select().from(hosts).where(eq(hosts.id, id)).get()
  if (!host) throw notFound('host', id)
  if (host.tlsMode !== 'auto' || host.tlsChallenge !== 'dns' || !host.tlsDnsProvider)
    throw badRequest(`host ${id} does not use the DNS challenge: give it automatic TLS with DNS-01 and a DNS provider first`)
  return { provider: host.tlsDnsProvider, domain: host.domain }
}

export async function hostDnsCheck(id: number): Promise<HostDnsCheck & { host_id: number }> {
  const { provider } = await _providerOf(id)
  return { host_id: id, ...(await describeDnsCheck(provider)) }
}

export async function checkHostDnsNow(id: number, ctx: AuditContext): Promise<HostDnsCheck & { host_id: number }> {
  const { provider, domain } = await _providerOf(id)
  return { host_id: id, ...(await checkDnsProviderForHost(provider, domain, ctx)) }
}
