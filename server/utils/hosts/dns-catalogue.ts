// The DNS-provider catalogue: one declaration drives validation, the API, the
// builder's module names and the operator docs. Adding a provider is an entry
// here plus a migration widening the CHECK on dns_providers.name.

export interface DnsFieldDescriptor { key: string; label: string; required: boolean; placeholder?: string; secret?: boolean }
export interface DnsProviderDefinition {
  name: 'provider_a' | 'provider_b'
  display_name: string
  proxy_module: string
  /** The provider object's `name` inside the ACME issuer's dns challenge. */
  module: 'cloudflare' | 'route53'
  docs_url: string
  fields: DnsFieldDescriptor[]
}

export const DNS_PROVIDER_CATALOGUE: DnsProviderDefinition[] = [
  {
    name: 'provider_a', display_name: 'Cloudflare', proxy_module: 'dns.providers.cloudflare', module: 'cloudflare',
    docs_url: 'https://developers.cloudflare.com/fundamentals/api/get-started/create-token/',
    fields: [{ key: 'api_token', label: 'API token (Zone:Read and DNS:Edit)', required: true, placeholder: '40-character API token', secret: true }],
  },
  {
    name: 'provider_b', display_name: 'Amazon Route 53', proxy_module: 'dns.providers.route53', module: 'route53',
    docs_url: 'https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/access-control-overview.html',
    fields: [
      { key: 'access_key_id', label: 'Access key ID', required: true, placeholder: 'AKIA…' },
      { key: 'secret_access_key', label: 'Secret access key', required: true, secret: true },
      { key: 'region', label: 'Region', required: false, placeholder: 'us-east-1' },
    ],
  },
]

export function findDnsProvider(name: string): DnsProviderDefinition | undefined {
  return DNS_PROVIDER_CATALOGUE.find((p) => p.name === name)
}

/** Caddy placeholder the proxy expands from its own environment (legacy fallback). */
export const PROVIDER_A_ENV_PLACEHOLDER = '{env.PROVIDER_A_API_TOKEN}'
