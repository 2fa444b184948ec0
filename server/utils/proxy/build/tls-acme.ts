import {
  CHALLENGE_DELEGATION,
  DNS_PROVIDER_CATALOGUE,
  delegationTarget,
  dnsChallengeConfig,
  findDnsProvider,
} from '../../hosts/dns-catalogue'
import type { HostSnapshot, Json, ProxySnapshot } from './types'

function _challenges(host: HostSnapshot, snapshot: ProxySnapshot, warnings: string[]): Json | null {
  if (host.tls_challenge === 'http') return { 'tls-alpn': { disabled: true } }
  if (host.tls_challenge === 'tls-alpn') return { http: { disabled: true } }
  if (!snapshot.modules.includes('dns')) {
    warnings.push(
      `host ${host.domain}: DNS-01 needs the proxy's DNS modules (PROXY_MODULES lacks dns); no certificate policy emitted, so the proxy falls back to its default issuers and challenges`,
    )
    return null
  }
  const provider = host.tls_dns_provider ? snapshot.dnsProviders[host.tls_dns_provider] : undefined
  if (!provider) {
    warnings.push(
      `host ${host.domain}: DNS provider ${host.tls_dns_provider ?? '(none)'} has no credentials; no certificate policy emitted, so the proxy falls back to its default issuers and challenges`,
    )
    return null
  }
  // The snapshot holds catalogue names only (hosts/dns-credentials.ts).
  const def = findDnsProvider(host.tls_dns_provider!)!
  // DNS-01 alone: the other two are switched off explicitly, not left to certmagic's preference.
  // The module's JSON comes from the provider's declaration (hosts/dns-catalogue.ts).
  const dns: Json = dnsChallengeConfig(def, provider.credentials)
  // Delegated: the TXT goes to the host's name inside the delegation zone, where its
  // _acme-challenge CNAMEs point (one name for all the host's names: they share one order).
  const delegation = provider.credentials[CHALLENGE_DELEGATION]
  if (delegation) dns.override_domain = delegationTarget(host.domain, delegation)
  return { dns, http: { disabled: true }, 'tls-alpn': { disabled: true } }
}

/**
 * One automation policy per auto-TLS host (in host order), with only the chosen
 * challenge enabled. Never a policy without subjects: it would catch every name.
 * Challenge keys: `http` and `tls-alpn` (with a dash), both accepted by 2.6.2.
 */
export function buildAcmePolicies(snapshot: ProxySnapshot, hosts: HostSnapshot[], warnings: string[]): Json[] {
  const policies: Json[] = []
  for (const host of hosts) {
    if (host.tls_mode !== 'auto') continue
    const challenges = _challenges(host, snapshot, warnings)
    if (!challenges) continue
    const issuer: Json = { module: 'acme' }
    const ca = host.tls_acme_ca_url ?? snapshot.acme.caUrl
    const email = host.tls_email ?? snapshot.acme.email
    if (ca) issuer.ca = ca
    if (email) issuer.email = email
    if (snapshot.acme.trustedRootsPemFile) issuer.trusted_roots_pem_files = [snapshot.acme.trustedRootsPemFile]
    issuer.challenges = challenges
    policies.push({ subjects: [host.domain, ...host.aliases], issuers: [issuer] })
  }
  return policies
}

/**
 * The tls automation's maintenance settings. `renew_interval` goes into every
 * configuration while it is set, with TLS hosts or without: a Caddy node starts
 * its certificate maintenance timer with the first configuration it loads (the
 * http app always starts the tls app) and keeps that period across later loads
 * (certmagic's cache and its timer are made once per process; a reload changes
 * only the "less than five intervals left" renewal threshold), so the value
 * must be there from the first push (docs/scaling.md).
 */
export function buildCertificateMaintenance(snapshot: ProxySnapshot): Json {
  return snapshot.renewIntervalSeconds === null ? {} : { renew_interval: `${snapshot.renewIntervalSeconds}s` }
}

/**
 * The dns challenge's provider object (and resolvers) for stored credentials, as the
 * ACME policies above hold it: the credentials check sends the proxy exactly this.
 */
export function dnsChallengeOf(module: ProxySnapshot['dnsProviders'][string]['module'], stored: Record<string, string>): Json {
  // Each catalogue entry has a module of its own (tests/unit/dns-catalogue.test.ts).
  return dnsChallengeConfig(DNS_PROVIDER_CATALOGUE.find((p) => p.module === module)!, stored)
}
