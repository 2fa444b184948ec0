import { dnsProviders } from '../../../db/schema'
import type { Executor } from '../core/db'
import { getConfig } from '../core/config'
import { getSecretsBox } from '../core/secrets'
import { DNS_PROVIDER_CATALOGUE, PROVIDER_A_ENV_PLACEHOLDER } from './dns-catalogue'

// Sealing of DNS credentials, and what the proxy snapshot reads of them.
// Imports nothing from proxy/: the snapshot depends on hosts/, never the reverse.

type DnsProviderRow = typeof dnsProviders.$inferSelect

/** The enabled providers' credentials, by catalogue name, as the proxy configuration needs them. */
export type DnsProviderCredentials = Record<string, { module: string; credentials: Record<string, string> }>

/** The secrets box binds each sealed value to its owner, so a value moved to another row does not open. */
export const dnsCredentialsOwner = (name: string) => `dns_providers/${name}/credentials`

export function sealDnsCredentials(name: string, credentials: Record<string, string>): string {
  return getSecretsBox().seal(JSON.stringify(credentials), dnsCredentialsOwner(name))
}

export function openDnsCredentials(row: DnsProviderRow | undefined): Record<string, string> | null {
  if (!row?.credentials) return null
  return JSON.parse(getSecretsBox().open(row.credentials, dnsCredentialsOwner(row.name)))
}

/**
 * Decrypted credentials go into the snapshot only, on every reconcile, so a
 * rotation reaches the proxy without restarting it. provider_a without a stored
 * row falls back to the legacy environment variable (a placeholder the proxy resolves).
 */
export async function readDnsProviderCredentials(exec: Executor): Promise<DnsProviderCredentials> {
  const rows = new Map((await exec.select().from(dnsProviders)).map((r) => [r.name, r]))
  const out: DnsProviderCredentials = {}
  for (const def of DNS_PROVIDER_CATALOGUE) {
    const row = rows.get(def.name)
    const credentials = row?.enabled ? openDnsCredentials(row) : null
    if (credentials) out[def.name] = { module: def.module, credentials }
    else if (!row && def.name === 'provider_a' && getConfig().providerAApiToken)
      out[def.name] = { module: def.module, credentials: { api_token: PROVIDER_A_ENV_PLACEHOLDER } }
  }
  return out
}
