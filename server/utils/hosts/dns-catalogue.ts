import { isIP } from 'node:net'

// The DNS-provider catalogue: one declaration drives validation, the API, the
// builder's module names and the operator docs. Adding a provider is an entry
// here plus a migration widening the CHECK on dns_providers.name.

/** `options`: the only values the field takes (the UI offers them as a choice). */
export interface DnsFieldDescriptor {
  key: string
  label: string
  required: boolean
  placeholder?: string
  secret?: boolean
  options?: string[]
}
/**
 * A format a credential must have before it is stored: what the proxy's module
 * checks at provision (a value it refuses fails the whole /load and is quoted in
 * its error), or what the provider issues. `rule` is shown in the 400; the value never is.
 */
export interface DnsCredentialRule {
  field: string
  test: (value: string) => boolean
  rule: string
}
export type DnsModuleName = 'cloudflare' | 'route53' | 'rfc2136'
export interface DnsProviderDefinition {
  name: 'provider_a' | 'provider_b' | 'provider_c'
  display_name: string
  proxy_module: string
  /** The provider object's `name` inside the ACME issuer's dns challenge. */
  module: DnsModuleName
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

// caddy-dns/rfc2136 v1.0.0 checks nothing at provision either (it expands
// placeholders in every field); libdns/rfc2136 v1.0.0 signs each update with
// miekg/dns v1.1.73, which is where a bad value fails, at issuance time:
// - the algorithm: CanonicalName(alg) must be one of its HMAC names, else "dns: bad key algorithm"
//   (hmac-md5 is listed by BIND but "no longer supported" by miekg/dns);
// - the secret: base64.StdEncoding, else "illegal base64 data";
// - the key name: packed as a domain name (labels of at most 63, 255 in all);
// - the server: net.Dial("tcp", server), so host:port with brackets around IPv6.
export const TSIG_ALGORITHMS = ['hmac-sha256', 'hmac-sha384', 'hmac-sha512', 'hmac-sha224', 'hmac-sha1']
const _LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?'
const _DNS_NAME = new RegExp(`^(?=.{1,253}\\.?$)${_LABEL}(?:\\.${_LABEL})*\\.?$`)
const _BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
/** Shorter TSIG secrets are guessable (RFC 8945 §6: at least half the HMAC's output); tsig-keygen makes 32 bytes. */
const _TSIG_MIN_BYTES = 16

function _isTsigAlgorithm(v: string): boolean {
  return TSIG_ALGORITHMS.includes(v.toLowerCase().replace(/\.$/, ''))
}
function _isTsigSecret(v: string): boolean {
  return v.length > 0 && _BASE64.test(v) && Buffer.from(v, 'base64').length >= _TSIG_MIN_BYTES
}
/** host:port as Go's net.Dial takes it: a DNS name, an IPv4 address or a bracketed IPv6 address, and a port 1-65535. */
export function isDnsServerAddress(v: string): boolean {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(v)
  if (!m) return false
  const port = Number(m[3])
  if (port < 1 || port > 65535) return false
  if (m[1] !== undefined) return isIP(m[1]) === 6
  return isIP(m[2]!) === 4 || (!/^[\d.]+$/.test(m[2]!) && _DNS_NAME.test(m[2]!))
}
/** A DNS name (letters, digits, - and _ in labels of at most 63; an optional final dot). */
export function isDnsName(v: string): boolean {
  return _DNS_NAME.test(v)
}

export const DNS_PROVIDER_CATALOGUE: DnsProviderDefinition[] = [
  {
    name: 'provider_a',
    display_name: 'Cloudflare',
    proxy_module: 'dns.providers.cloudflare',
    module: 'cloudflare',
    docs_url: 'https://developers.cloudflare.com/fundamentals/api/get-started/create-token/',
    fields: [
      {
        key: 'api_token',
        label: 'API token (Zone:Read and DNS:Edit)',
        required: true,
        placeholder: '40-character API token',
        secret: true,
      },
    ],
    rules: [
      {
        field: 'api_token',
        test: (v) => _CLOUDFLARE_LEGACY.test(v) || _CLOUDFLARE_NEW.test(v),
        rule: 'must be a Cloudflare API token as the proxy\'s cloudflare module accepts it: 35 to 50 characters of A-Z a-z 0-9 _ -, or "cfut_"/"cfat_" followed by 32 to 256 of them (no quotes, braces or spaces); paste it exactly as Cloudflare shows it',
      },
    ],
    public_fields: [],
  },
  {
    name: 'provider_b',
    display_name: 'Amazon Route 53',
    proxy_module: 'dns.providers.route53',
    module: 'route53',
    docs_url: 'https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/access-control-overview.html',
    fields: [
      { key: 'access_key_id', label: 'Access key ID', required: true, placeholder: 'AKIA…' },
      { key: 'secret_access_key', label: 'Secret access key', required: true, secret: true },
      { key: 'region', label: 'Region', required: false, placeholder: 'us-east-1' },
    ],
    rules: [
      {
        field: 'access_key_id',
        test: (v) => _AWS_ACCESS_KEY_ID.test(v),
        rule: 'must be an AWS access key ID: 16 to 128 letters, digits or _ (such as AKIA followed by 16 capitals and digits)',
      },
      {
        field: 'secret_access_key',
        test: (v) => _AWS_SECRET_ACCESS_KEY.test(v),
        rule: 'must be an AWS secret access key: 16 to 128 characters of A-Z a-z 0-9 / + = (40 as AWS issues them; no quotes, braces or spaces)',
      },
      { field: 'region', test: (v) => _AWS_REGION.test(v), rule: 'must be an AWS region such as us-east-1 or eu-west-3' },
    ],
    public_fields: ['region'],
  },
  {
    name: 'provider_c',
    display_name: 'RFC 2136 dynamic update (BIND, Knot, PowerDNS)',
    proxy_module: 'dns.providers.rfc2136',
    module: 'rfc2136',
    docs_url: 'https://bind9.readthedocs.io/en/stable/manpages.html#tsig-keygen-tsig-key-generation-tool',
    fields: [
      { key: 'server', label: 'Primary server accepting updates (host:port)', required: true, placeholder: 'ns1.example.com:53' },
      { key: 'key_name', label: 'TSIG key name', required: true, placeholder: 'acme-update' },
      { key: 'key_alg', label: 'TSIG algorithm', required: true, placeholder: 'hmac-sha256', options: TSIG_ALGORITHMS },
      { key: 'key', label: 'TSIG secret (base64)', required: true, placeholder: 'the secret "…" line of tsig-keygen', secret: true },
      { key: 'zone', label: 'Zone the key may update (hosts must lie inside it)', required: false, placeholder: 'example.com' },
    ],
    rules: [
      {
        field: 'server',
        test: isDnsServerAddress,
        rule: 'must be host:port of the DNS server that accepts the updates, such as ns1.example.com:53, 192.0.2.53:53 or [2001:db8::53]:53 (the proxy dials exactly this; the port is required)',
      },
      {
        field: 'key_name',
        test: isDnsName,
        rule: 'must be the TSIG key name as the DNS server knows it: a DNS name of letters, digits, - and _ (such as acme-update or acme.example.com)',
      },
      {
        field: 'key_alg',
        test: _isTsigAlgorithm,
        rule: `must be one of ${TSIG_ALGORITHMS.join(', ')} (what the proxy's rfc2136 module can sign with; hmac-md5 is not supported)`,
      },
      {
        field: 'key',
        test: _isTsigSecret,
        rule: `must be the TSIG secret in base64 as tsig-keygen prints it (A-Z a-z 0-9 + / with = padding), at least ${_TSIG_MIN_BYTES} bytes once decoded`,
      },
      { field: 'zone', test: isDnsName, rule: 'must be a DNS zone name such as example.com' },
    ],
    public_fields: ['server', 'key_name', 'key_alg', 'zone'],
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
  return Object.entries(credentials)
    .filter(([k]) => !def.public_fields.includes(k))
    .map(([, v]) => v)
}

/** Whether `name` (a host name, possibly `*.`) lies in `zone` or is its apex. Case and a final dot do not matter. */
export function nameInZone(name: string, zone: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '').replace(/^\*\./, '')
  const z = zone.toLowerCase().replace(/\.$/, '')
  return n === z || n.endsWith(`.${z}`)
}
