// The DNS-provider catalogue: one declaration drives validation, the API, the
// builder's module names and the operator docs. Adding a provider is an entry
// here plus a migration widening the CHECK on dns_providers.name.

export interface DnsFieldDescriptor { key: string; label: string; required: boolean; placeholder?: string; secret?: boolean }
/**
 * A format a credential must have before it is stored: what the proxy's module
 * checks at provision (a value it refuses fails the whole /load and is quoted in
 * its error), or what the provider issues. `rule` is shown in the 400; the value never is.
 */
export interface DnsCredentialRule { field: string; test: (value: string) => boolean; rule: string }
export interface DnsProviderDefinition {
  name: 'provider_a' | 'provider_b'
  display_name: string
  proxy_module: string
  /** The provider object's `name` inside the ACME issuer's dns challenge. */
  module: 'cloudflare' | 'route53'
  docs_url: string
  fields: DnsFieldDescriptor[]
  /** Not presented by the API; docs/tls.md lists them. */
  rules: DnsCredentialRule[]
  /** Fields whose values are not secret (kept readable in proxy errors); every other value is redacted. */
  public_fields: string[]
}

// caddy-dns/cloudflare v0.2.4 Provision(): legacy tokens, or the cfut_/cfat_ formats.
const _CLOUDFLARE_LEGACY = /^[A-Za-z0-9_-]{35,50}$/
const _CLOUDFLARE_NEW = /^cf(ut|at)_[A-Za-z0-9_-]{32,256}$/
// caddy-dns/route53 v1.6.2 checks nothing at provision (it only expands {placeholders});
// these are AWS's own formats, so a placeholder, a quote or a space never reaches the proxy.
const _AWS_ACCESS_KEY_ID = /^\w{16,128}$/
const _AWS_SECRET_ACCESS_KEY = /^[A-Za-z0-9/+=]{16,128}$/
const _AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/

export const DNS_PROVIDER_CATALOGUE: DnsProviderDefinition[] = [
  {
    name: 'provider_a', display_name: 'Cloudflare', proxy_module: 'dns.providers.cloudflare', module: 'cloudflare',
    docs_url: 'https://developers.cloudflare.com/fundamentals/api/get-started/create-token/',
    fields: [{ key: 'api_token', label: 'API token (Zone:Read and DNS:Edit)', required: true, placeholder: '40-character API token', secret: true }],
    rules: [{
      field: 'api_token', test: (v) => _CLOUDFLARE_LEGACY.test(v) || _CLOUDFLARE_NEW.test(v),
      rule: 'must be a Cloudflare API token as the proxy\'s cloudflare module accepts it: 35 to 50 characters of A-Z a-z 0-9 _ -, or "cfut_"/"cfat_" followed by 32 to 256 of them (no quotes, braces or spaces); paste it exactly as Cloudflare shows it',
    }],
    public_fields: [],
  },
  {
    name: 'provider_b', display_name: 'Amazon Route 53', proxy_module: 'dns.providers.route53', module: 'route53',
    docs_url: 'https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/access-control-overview.html',
    fields: [
      { key: 'access_key_id', label: 'Access key ID', required: true, placeholder: 'AKIA…' },
      { key: 'secret_access_key', label: 'Secret access key', required: true, secret: true },
      { key: 'region', label: 'Region', required: false, placeholder: 'us-east-1' },
    ],
    rules: [
      { field: 'access_key_id', test: (v) => _AWS_ACCESS_KEY_ID.test(v), rule: 'must be an AWS access key ID: 16 to 128 letters, digits or _ (such as AKIA followed by 16 capitals and digits)' },
      { field: 'secret_access_key', test: (v) => _AWS_SECRET_ACCESS_KEY.test(v), rule: 'must be an AWS secret access key: 16 to 128 characters of A-Z a-z 0-9 / + = (40 as AWS issues them; no quotes, braces or spaces)' },
      { field: 'region', test: (v) => _AWS_REGION.test(v), rule: 'must be an AWS region such as us-east-1 or eu-west-3' },
    ],
    public_fields: ['region'],
  },
]

export function findDnsProvider(name: string): DnsProviderDefinition | undefined {
  return DNS_PROVIDER_CATALOGUE.find((p) => p.name === name)
}

/** Caddy placeholder the proxy expands from its own environment (legacy fallback). */
export const PROVIDER_A_ENV_PLACEHOLDER = '{env.PROVIDER_A_API_TOKEN}'

/** The first rule a credential breaks ("credentials.<field>: <rule>"), or null. Never quotes the value. */
export function credentialRuleViolation(def: DnsProviderDefinition, credentials: Record<string, string>): string | null {
  for (const r of def.rules) {
    const value = credentials[r.field]
    if (value !== undefined && !r.test(value)) return `credentials.${r.field}: ${r.rule}`
  }
  return null
}

/** The values of a provider's credentials that must never be shown (for redaction). */
export function secretCredentialValues(def: DnsProviderDefinition, credentials: Record<string, string>): string[] {
  return Object.entries(credentials).filter(([k]) => !def.public_fields.includes(k)).map(([, v]) => v)
}
