import { isIP } from 'node:net'

// The DNS-provider catalogue: one declaration drives validation, the API, the
// builder's module names and the operator docs. Adding a provider is an entry
// here plus a migration widening the CHECK on dns_providers.name.

/**
 * One credential field of a provider, as the API and the UI present it.
 * `options`: the only values the field takes (the UI offers them as a choice).
 */
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
/**
 * How one field is declared: its descriptor, its format, whether its value may
 * be shown (only `public` values stay readable in proxy errors; every other one
 * is redacted), where it goes in the proxy module's JSON (`json`: its key there,
 * the field's own key by default; `panel_only`: the panel's own, never sent) and
 * where to find it (`where`, for docs/tls.md).
 */
export interface DnsFieldDeclaration extends DnsFieldDescriptor {
  format: { test: (value: string) => boolean; rule: string }
  public?: boolean
  json?: string
  panel_only?: boolean
  where: string
}
/** One provider, declared once: everything else (catalogue, checks, module JSON, redaction, UI, docs) derives from it. */
export interface DnsProviderDeclaration {
  name: string
  display_name: string
  /** The provider object's `name` inside the ACME issuer's dns challenge (module dns.providers.<module>). */
  module: string
  docs_url: string
  fields: DnsFieldDeclaration[]
  /** Values the module needs that the operator may leave out. */
  defaults?: Record<string, string>
  /** DNS servers for the zone lookup and the propagation check (default: the proxy's system resolvers). */
  resolvers?: (credentials: Record<string, string>) => string[]
  /** Nginx Proxy Manager's dns_provider ids that mean this provider (for its import). */
  npm_ids?: string[]
  /** false: no challenge delegation field (acme-dns is a delegation of its own). */
  delegation?: false
  /** Optional fields of which at least one must be set (ClouDNS: its API user ID or its sub-user ID). */
  one_of_required?: string[]
}
export interface DnsProviderDefinition extends Omit<DnsProviderDeclaration, 'fields'> {
  proxy_module: string
  fields: DnsFieldDescriptor[]
  declared: DnsFieldDeclaration[]
  /** Not presented by the API; docs/tls.md lists them. */
  rules: DnsCredentialRule[]
  /** Fields whose values are not secret (kept readable in proxy errors); every other value is redacted. */
  public_fields: string[]
}

/**
 * Challenge delegation, offered by every provider but acme-dns: the hosts' zones
 * stay where they are, and each `_acme-challenge.<name>` is a CNAME into this
 * zone, which the provider can write (the ACME issuer's override_domain).
 */
export const CHALLENGE_DELEGATION = 'challenge_delegation'
const _DELEGATION_FIELD: DnsFieldDeclaration = {
  key: CHALLENGE_DELEGATION,
  label: "Delegation zone (optional): every host's _acme-challenge name is then a CNAME into it",
  required: false,
  placeholder: 'acme.example.net',
  public: true,
  panel_only: true,
  where: 'a zone this provider can write; each host then shows the CNAME record to create in its own zone',
  format: {
    test: (v) => _DNS_NAME.test(v) && v.replace(/\.$/, '').includes('.'),
    rule: 'must be a DNS zone name with at least two labels, such as acme.example.net (a zone this provider can write)',
  },
}

/**
 * Propagation, offered by every provider: before the CA is asked, the proxy's
 * ACME issuer waits until the challenge TXT answers at the DNS servers (the
 * zone's authoritative ones found through NS, or the resolvers given), for at
 * most the timeout; a slow provider then fails as "timed out waiting for record
 * to fully propagate" (dns_propagation_timeout), not as a CA refusal.
 */
export const PROPAGATION_TIMEOUT = 'propagation_timeout'
export const PROPAGATION_RESOLVERS = 'propagation_resolvers'
/** Caddy's own default (certmagic's defaultDNSPropagationTimeout) when the field is empty. */
export const DEFAULT_PROPAGATION_SECONDS = 120
const _PROPAGATION_MIN_SECONDS = 10
const _PROPAGATION_MAX_SECONDS = 600
const _MAX_RESOLVERS = 4
const _splitResolvers = (v: string) => v.split(/\s*,\s*/).filter(Boolean)
const _PROPAGATION_FIELDS: DnsFieldDeclaration[] = [
  {
    key: PROPAGATION_TIMEOUT,
    label: `Propagation wait in seconds (optional, ${DEFAULT_PROPAGATION_SECONDS} when empty): how long the proxy waits for the challenge record to show at the DNS servers before asking the CA`,
    required: false,
    placeholder: String(DEFAULT_PROPAGATION_SECONDS),
    public: true,
    panel_only: true,
    where:
      "how long this provider takes to publish a change on all its DNS servers (its documentation's TTL or propagation time); raise it for a slow provider",
    format: {
      test: (v) => /^\d{1,4}$/.test(v) && Number(v) >= _PROPAGATION_MIN_SECONDS && Number(v) <= _PROPAGATION_MAX_SECONDS,
      rule: `must be a whole number of seconds from ${_PROPAGATION_MIN_SECONDS} to ${_PROPAGATION_MAX_SECONDS}`,
    },
  },
  {
    key: PROPAGATION_RESOLVERS,
    label:
      "DNS servers to look for the challenge record at (optional, host:port, comma-separated; empty: the zone's authoritative servers)",
    required: false,
    placeholder: '192.0.2.53:53',
    public: true,
    panel_only: true,
    where:
      "the servers the CA's view depends on, when the zone's NS records do not lead to them from the proxy (a hidden primary, split-horizon DNS)",
    format: {
      test: (v) => {
        const list = _splitResolvers(v)
        return list.length >= 1 && list.length <= _MAX_RESOLVERS && list.every(isDnsServerAddress)
      },
      rule: `must be 1 to ${_MAX_RESOLVERS} DNS servers as host:port separated by commas, such as 192.0.2.53:53, [2001:db8::53]:53`,
    },
  },
]

function _define(declared: DnsProviderDeclaration): DnsProviderDefinition {
  const own = declared.delegation === false ? declared.fields : [...declared.fields, _DELEGATION_FIELD]
  const d = { ...declared, fields: [...own, ..._PROPAGATION_FIELDS] }
  return {
    ...d,
    proxy_module: `dns.providers.${d.module}`,
    fields: d.fields.map(({ key, label, required, placeholder, secret, options }) => ({
      key,
      label,
      required,
      ...(placeholder === undefined ? {} : { placeholder }),
      ...(secret === undefined ? {} : { secret }),
      ...(options === undefined ? {} : { options }),
    })),
    declared: d.fields,
    rules: d.fields.map((f) => ({ field: f.key, test: f.format.test, rule: f.format.rule })),
    public_fields: d.fields.filter((f) => f.public).map((f) => f.key),
  }
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

// Formats of the vendors' modules. None of these modules checks a value at provision:
// each expands Caddy {placeholders} in its fields (so a brace would read the proxy's
// environment or files) and sends the rest to the vendor at issuance, where a wrong
// shape fails minutes later. So each field is held to the vendor's documented shape,
// or else to a charset without spaces, quotes, backslashes or braces and a length.
const _re = (re: RegExp, rule: string) => ({ test: (v: string) => re.test(v), rule })
const _SAFE_CHARS = 'A-Za-z0-9!#$%&()*+,./:;<=>?@\\[\\]^_`|~-'
const _safe = (min: number, max: number, what: string) =>
  _re(
    new RegExp(`^[${_SAFE_CHARS}]{${min},${max}}$`),
    `must be ${what}: ${min} to ${max} printable characters without spaces, quotes, backslashes or braces`,
  )
const _UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/
const _uuid = (what: string) => _re(_UUID, `must be ${what}: a UUID such as 00000000-0000-0000-0000-000000000000`)
/** An http(s) address without credentials, placeholders or spaces, as a module's API base. */
function _isHttpUrl(v: string): boolean {
  if (v.length > 2048 || /[\s"'\\{}<>]/.test(v)) return false
  try {
    const u = new URL(v)
    return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && !!u.hostname
  } catch {
    return false
  }
}
const _url = (what: string) => ({
  test: _isHttpUrl,
  rule: `must be ${what}: an http:// or https:// address such as https://dns.example.com:8443 (no user:password@, spaces or braces)`,
})

/** The declarations, in the order the API lists them (the spec's three first). */
const _DECLARATIONS: DnsProviderDeclaration[] = [
  {
    name: 'provider_a',
    display_name: 'Cloudflare',
    module: 'cloudflare',
    docs_url: 'https://developers.cloudflare.com/fundamentals/api/get-started/create-token/',
    npm_ids: ['cloudflare'],
    fields: [
      {
        key: 'api_token',
        label: 'API token (Zone:Read and DNS:Edit)',
        required: true,
        placeholder: '40-character API token',
        secret: true,
        where: 'My Profile → API Tokens → Create Token, template "Edit zone DNS" (Zone:Read and DNS:Edit on the zone)',
        format: {
          test: (v) => _CLOUDFLARE_LEGACY.test(v) || _CLOUDFLARE_NEW.test(v),
          rule: 'must be a Cloudflare API token as the proxy\'s cloudflare module accepts it: 35 to 50 characters of A-Z a-z 0-9 _ -, or "cfut_"/"cfat_" followed by 32 to 256 of them (no quotes, braces or spaces); paste it exactly as Cloudflare shows it',
        },
      },
    ],
  },
  {
    name: 'provider_b',
    display_name: 'Amazon Route 53',
    module: 'route53',
    docs_url: 'https://docs.aws.amazon.com/Route53/latest/DeveloperGuide/access-control-overview.html',
    npm_ids: ['route53'],
    // The module needs a region even though Route 53 is global.
    defaults: { region: 'us-east-1' },
    fields: [
      {
        key: 'access_key_id',
        label: 'Access key ID',
        required: true,
        placeholder: 'AKIA…',
        where:
          'IAM → Users → the user → Security credentials → Create access key (a policy allowing route53:ChangeResourceRecordSets and route53:ListHostedZonesByName)',
        format: _re(
          _AWS_ACCESS_KEY_ID,
          'must be an AWS access key ID: 16 to 128 letters, digits or _ (such as AKIA followed by 16 capitals and digits)',
        ),
      },
      {
        key: 'secret_access_key',
        label: 'Secret access key',
        required: true,
        secret: true,
        where: 'shown once, next to the access key ID, when the key is created',
        format: _re(
          _AWS_SECRET_ACCESS_KEY,
          'must be an AWS secret access key: 16 to 128 characters of A-Z a-z 0-9 / + = (40 as AWS issues them; no quotes, braces or spaces)',
        ),
      },
      {
        key: 'region',
        label: 'Region',
        required: false,
        placeholder: 'us-east-1',
        public: true,
        where: 'any AWS region (Route 53 is global); us-east-1 when left empty',
        format: _re(_AWS_REGION, 'must be an AWS region such as us-east-1 or eu-west-3'),
      },
    ],
  },
  {
    name: 'provider_c',
    display_name: 'RFC 2136 dynamic update (BIND, Knot, PowerDNS)',
    module: 'rfc2136',
    docs_url: 'https://bind9.readthedocs.io/en/stable/manpages.html#tsig-keygen-tsig-key-generation-tool',
    npm_ids: ['rfc2136'],
    // The zone (SOA) lookup and the propagation check ask the server that takes the
    // updates: it is authoritative, so it answers for private, split-horizon and
    // undelegated zones alike, and sees the record at once.
    resolvers: (c) => (c.server ? [c.server] : []),
    fields: [
      {
        key: 'server',
        label: 'Primary server accepting updates (host:port)',
        required: true,
        placeholder: 'ns1.example.com:53',
        public: true,
        where: 'the primary name server of the zone, with its port (53 unless changed)',
        format: {
          test: isDnsServerAddress,
          rule: 'must be host:port of the DNS server that accepts the updates, such as ns1.example.com:53, 192.0.2.53:53 or [2001:db8::53]:53 (the proxy dials exactly this; the port is required)',
        },
      },
      {
        key: 'key_name',
        label: 'TSIG key name',
        required: true,
        placeholder: 'acme-update',
        public: true,
        where: 'the name given to tsig-keygen (the key "…" line), allowed by the zone\'s update-policy',
        format: _re(
          _DNS_NAME,
          'must be the TSIG key name as the DNS server knows it: a DNS name of letters, digits, - and _ (such as acme-update or acme.example.com)',
        ),
      },
      {
        key: 'key_alg',
        label: 'TSIG algorithm',
        required: true,
        placeholder: 'hmac-sha256',
        options: TSIG_ALGORITHMS,
        public: true,
        where: 'the algorithm "…" line of tsig-keygen (hmac-sha256 by default)',
        format: {
          test: _isTsigAlgorithm,
          rule: `must be one of ${TSIG_ALGORITHMS.join(', ')} (what the proxy's rfc2136 module can sign with; hmac-md5 is not supported)`,
        },
      },
      {
        key: 'key',
        label: 'TSIG secret (base64)',
        required: true,
        placeholder: 'the secret "…" line of tsig-keygen',
        secret: true,
        where: 'the secret "…" line printed by tsig-keygen',
        format: {
          test: _isTsigSecret,
          rule: `must be the TSIG secret in base64 as tsig-keygen prints it (A-Z a-z 0-9 + / with = padding), at least ${_TSIG_MIN_BYTES} bytes once decoded`,
        },
      },
      {
        key: 'zone',
        label: 'Zone the key may update (hosts must lie inside it)',
        required: false,
        placeholder: 'example.com',
        public: true,
        // The panel's own (checked at host save); the module has no such field.
        panel_only: true,
        where: "the zone named in the server's update-policy for this key",
        format: _re(_DNS_NAME, 'must be a DNS zone name such as example.com'),
      },
    ],
  },
  // caddy-dns/hetzner v1.0.0 → libdns/hetzner v1.0.0 (the DNS Console API, dns.hetzner.com).
  {
    name: 'hetzner',
    display_name: 'Hetzner DNS',
    module: 'hetzner',
    docs_url: 'https://docs.hetzner.com/dns-console/dns/general/api-access-token/',
    npm_ids: ['hetzner'],
    fields: [
      {
        key: 'auth_api_token',
        label: 'DNS Console API token',
        required: true,
        placeholder: '32-character API token',
        secret: true,
        where: 'dns.hetzner.com → Manage API tokens → Create access token',
        format: _re(/^[A-Za-z0-9]{32}$/, 'must be a Hetzner DNS Console API token: 32 letters and digits, as dns.hetzner.com shows it'),
      },
    ],
  },
  // caddy-dns/digitalocean (2025-06-06) → libdns/digitalocean: JSON key auth_token.
  {
    name: 'digitalocean',
    display_name: 'DigitalOcean',
    module: 'digitalocean',
    docs_url: 'https://docs.digitalocean.com/reference/api/create-personal-access-token/',
    npm_ids: ['digitalocean'],
    fields: [
      {
        key: 'auth_token',
        label: 'Personal access token (domain read and write)',
        required: true,
        placeholder: 'dop_v1_…',
        secret: true,
        where: 'Control panel → API → Tokens → Generate New Token, with the domain:read and domain:update scopes',
        format: _re(
          /^(?:do[opr]_v1_)?[a-f0-9]{64}$/,
          'must be a DigitalOcean token: "dop_v1_" followed by 64 hexadecimal characters (or the 64 characters alone)',
        ),
      },
    ],
  },
  // caddy-dns/gandi v1.1.0 → libdns/gandi v1.1.0 (LiveDNS with a personal access token).
  {
    name: 'gandi',
    display_name: 'Gandi LiveDNS',
    module: 'gandi',
    docs_url: 'https://api.gandi.net/docs/authentication/',
    npm_ids: ['gandi'],
    fields: [
      {
        key: 'bearer_token',
        label: 'Personal access token (Manage domain name technical configurations)',
        required: true,
        secret: true,
        where:
          'admin.gandi.net → Organizations → Sharing → Personal Access Token, permission "Manage domain name technical configurations"',
        format: _re(/^[A-Za-z0-9_-]{24,128}$/, 'must be a Gandi personal access token: 24 to 128 characters of A-Z a-z 0-9 _ -'),
      },
    ],
  },
  // caddy-dns/porkbun v0.3.1 → libdns/porkbun v1.0.1 (trims spaces, then sends both keys).
  {
    name: 'porkbun',
    display_name: 'Porkbun',
    module: 'porkbun',
    docs_url: 'https://kb.porkbun.com/article/190-getting-started-with-the-porkbun-api',
    npm_ids: ['porkbun'],
    fields: [
      {
        key: 'api_key',
        label: 'API key',
        required: true,
        placeholder: 'pk1_…',
        where: 'porkbun.com → Account → API Access → Create API Key (then turn on "API Access" for the domain)',
        format: _re(/^pk1_[A-Za-z0-9]{32,128}$/, 'must be a Porkbun API key: "pk1_" followed by 32 to 128 letters and digits'),
      },
      {
        key: 'api_secret_key',
        label: 'Secret API key',
        required: true,
        placeholder: 'sk1_…',
        secret: true,
        where: 'shown once, next to the API key, when it is created',
        format: _re(/^sk1_[A-Za-z0-9]{32,128}$/, 'must be a Porkbun secret API key: "sk1_" followed by 32 to 128 letters and digits'),
      },
    ],
  },
  // caddy-dns/powerdns v1.0.2 → libdns/powerdns v0.1.4 (the authoritative server's HTTP API).
  {
    name: 'powerdns',
    display_name: 'PowerDNS (HTTP API)',
    module: 'powerdns',
    docs_url: 'https://doc.powerdns.com/authoritative/http-api/index.html',
    npm_ids: ['powerdns'],
    fields: [
      {
        key: 'server_url',
        label: 'API address',
        required: true,
        placeholder: 'https://pdns.example.com:8081',
        public: true,
        where: 'the webserver-address and webserver-port of pdns.conf (api=yes)',
        format: _url('the PowerDNS API address'),
      },
      {
        key: 'api_token',
        label: 'API key',
        required: true,
        secret: true,
        where: 'the api-key setting of pdns.conf',
        format: _safe(8, 256, 'the api-key of pdns.conf'),
      },
      {
        key: 'server_id',
        label: 'Server ID',
        required: false,
        placeholder: 'localhost',
        public: true,
        where: "the server id in the API's URLs; localhost unless changed",
        format: _re(/^[A-Za-z0-9._-]{1,64}$/, 'must be a PowerDNS server id: 1 to 64 letters, digits, . _ or - (localhost unless changed)'),
      },
    ],
  },
  // caddy-dns/namecheap v1.0.0 → libdns/namecheap v1.0.0 (the production endpoint).
  {
    name: 'namecheap',
    display_name: 'Namecheap',
    module: 'namecheap',
    docs_url: 'https://www.namecheap.com/support/api/intro/',
    npm_ids: ['namecheap'],
    fields: [
      {
        key: 'api_key',
        label: 'API key',
        required: true,
        secret: true,
        where: "Profile → Tools → Namecheap API Access → API key (the proxy's public address must be whitelisted there)",
        format: _re(/^[A-Za-z0-9]{32}$/, 'must be a Namecheap API key: 32 letters and digits'),
      },
      {
        key: 'user',
        label: 'API user',
        required: true,
        public: true,
        where: 'your Namecheap user name',
        format: _re(/^[A-Za-z0-9_.-]{1,64}$/, 'must be a Namecheap user name: 1 to 64 letters, digits, _ . or -'),
      },
      {
        key: 'client_ip',
        label: 'Whitelisted public IP of the proxy',
        required: false,
        placeholder: '203.0.113.7',
        public: true,
        where: 'the address whitelisted under API Access; left empty, the proxy looks its own up at issuance',
        format: { test: (v) => isIP(v) !== 0, rule: 'must be an IPv4 or IPv6 address such as 203.0.113.7' },
      },
    ],
  },
  // caddy-dns/azure v0.6.0 → libdns/azure v0.5.0 (a service principal, or the node's managed identity).
  {
    name: 'azure',
    display_name: 'Azure DNS',
    module: 'azure',
    docs_url: 'https://learn.microsoft.com/en-us/entra/identity-platform/howto-create-service-principal-portal',
    npm_ids: ['azure'],
    fields: [
      {
        key: 'subscription_id',
        label: 'Subscription ID',
        required: true,
        public: true,
        where: "the DNS zone's Overview page → Subscription ID",
        format: _uuid('an Azure subscription ID'),
      },
      {
        key: 'resource_group_name',
        label: 'Resource group of the DNS zone',
        required: true,
        public: true,
        where: "the DNS zone's Overview page → Resource group",
        format: _re(
          /^[-\w.()]{0,89}[-\w()]$/,
          'must be an Azure resource group name: 1 to 90 letters, digits, _ - . ( ), not ending in a dot',
        ),
      },
      {
        key: 'tenant_id',
        label: 'Tenant ID (empty for the managed identity)',
        required: false,
        public: true,
        where: 'Microsoft Entra ID → Overview → Tenant ID',
        format: _uuid('an Azure tenant ID'),
      },
      {
        key: 'client_id',
        label: 'Application (client) ID (empty for the managed identity)',
        required: false,
        where: 'App registrations → the application → Application (client) ID; give it the "DNS Zone Contributor" role on the zone',
        format: _uuid('an application (client) ID'),
      },
      {
        key: 'client_secret',
        label: 'Client secret (empty for the managed identity)',
        required: false,
        secret: true,
        where: 'App registrations → the application → Certificates & secrets → New client secret (its Value)',
        format: _re(/^[A-Za-z0-9._~-]{16,128}$/, "must be an Azure client secret's Value: 16 to 128 characters of A-Z a-z 0-9 . _ ~ -"),
      },
    ],
  },
  // caddy-dns/googleclouddns v1.1.0 → libdns/googleclouddns v1.2.0: a key file on the proxy node, or its default credentials.
  {
    name: 'googleclouddns',
    display_name: 'Google Cloud DNS',
    module: 'googleclouddns',
    docs_url: 'https://cloud.google.com/iam/docs/keys-create-delete',
    npm_ids: ['google'],
    fields: [
      {
        key: 'gcp_project',
        label: 'Project ID',
        required: true,
        placeholder: 'my-project-123',
        public: true,
        where: "the Google Cloud console's project picker → ID",
        format: _re(
          /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/,
          'must be a Google Cloud project ID: 6 to 30 lower-case letters, digits or -, starting with a letter',
        ),
      },
      {
        key: 'gcp_application_default',
        label: 'Service account key file on the proxy node (empty for its default credentials)',
        required: false,
        placeholder: '/etc/caddy/gcp-dns.json',
        public: true,
        where: 'IAM → Service accounts → Keys → Add key (JSON), with the "DNS Administrator" role; copy the file onto every proxy node',
        format: _re(
          /^\/(?!.*\/\.\.?(?:\/|$))[A-Za-z0-9._/-]{1,255}$/,
          'must be an absolute path on the proxy node such as /etc/caddy/gcp-dns.json (letters, digits, . _ - /; no .. parts)',
        ),
      },
    ],
  },
  // caddy-dns/linode v0.8.0 → libdns/linode v0.5.0 (api.linode.com v4).
  {
    name: 'linode',
    display_name: 'Linode (Akamai)',
    module: 'linode',
    docs_url: 'https://techdocs.akamai.com/linode-api/reference/get-started#personal-access-tokens',
    npm_ids: ['linode'],
    fields: [
      {
        key: 'api_token',
        label: 'Personal access token (Domains: read/write)',
        required: true,
        secret: true,
        where: 'cloud.linode.com → Profile → API Tokens → Create a Personal Access Token, Domains read/write',
        format: _re(/^[A-Za-z0-9]{64}$/, 'must be a Linode personal access token: 64 letters and digits'),
      },
    ],
  },
  // caddy-dns/netcup v1.0.0 → libdns/netcup v1.0.0 (the CCP DNS API).
  {
    name: 'netcup',
    display_name: 'netcup',
    module: 'netcup',
    docs_url: 'https://helpcenter.netcup.com/en/wiki/general/our-api',
    npm_ids: ['netcup'],
    fields: [
      {
        key: 'customer_number',
        label: 'Customer number',
        required: true,
        public: true,
        where: 'the customer number you log in to the Customer Control Panel with',
        format: _re(/^\d{1,10}$/, 'must be a netcup customer number: 1 to 10 digits'),
      },
      {
        key: 'api_key',
        label: 'API key',
        required: true,
        secret: true,
        where: 'Customer Control Panel → Master Data → API → Create API key',
        format: _re(/^[A-Za-z0-9]{16,64}$/, 'must be a netcup API key: 16 to 64 letters and digits'),
      },
      {
        key: 'api_password',
        label: 'API password',
        required: true,
        secret: true,
        where: 'Customer Control Panel → Master Data → API → Generate API password',
        format: _re(/^[A-Za-z0-9]{16,64}$/, 'must be a netcup API password: 16 to 64 letters and digits'),
      },
    ],
  },
  // caddy-dns/ionos v1.2.0 → libdns/ionos v1.2.0: the key is "<public prefix>.<secret>".
  {
    name: 'ionos',
    display_name: 'IONOS',
    module: 'ionos',
    docs_url: 'https://developer.hosting.ionos.com/docs/getstarted',
    npm_ids: ['ionos'],
    fields: [
      {
        key: 'auth_api_token',
        label: 'API key (prefix.secret)',
        required: true,
        placeholder: 'publicprefix.secret',
        secret: true,
        where: 'developer.hosting.ionos.com → API keys → Create, then join the public prefix and the secret with a dot',
        format: _re(
          /^[A-Za-z0-9]{16,64}\.[A-Za-z0-9_-]{16,256}$/,
          'must be an IONOS API key: the public prefix (16 to 64 letters and digits), a dot, and the secret (16 to 256 of A-Z a-z 0-9 _ -)',
        ),
      },
    ],
  },
  // caddy-dns/bunny v1.2.0 → libdns/bunny v1.4.0 (the account API key).
  {
    name: 'bunny',
    display_name: 'bunny.net DNS',
    module: 'bunny',
    docs_url: 'https://docs.bunny.net/reference/bunnynet-api-overview',
    npm_ids: ['bunny'],
    fields: [
      {
        key: 'access_key',
        label: 'Account API key',
        required: true,
        secret: true,
        where: 'dash.bunny.net → Account settings → API key',
        format: _re(/^[A-Za-z0-9-]{32,128}$/, 'must be a bunny.net API key: 32 to 128 letters, digits and dashes'),
      },
    ],
  },
  // caddy-dns/alidns v1.0.26 → libdns/alidns v1.0.4-libdns.v1.beta1 (region cn-hangzhou by default).
  {
    name: 'alidns',
    display_name: 'Alibaba Cloud DNS',
    module: 'alidns',
    docs_url: 'https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair',
    npm_ids: ['aliyun'],
    fields: [
      {
        key: 'access_key_id',
        label: 'AccessKey ID',
        required: true,
        placeholder: 'LTAI…',
        where: 'RAM console → Users → the user → Create AccessKey (with the AliyunDNSFullAccess policy)',
        format: _re(/^[A-Za-z0-9]{16,32}$/, 'must be an Alibaba Cloud AccessKey ID: 16 to 32 letters and digits'),
      },
      {
        key: 'access_key_secret',
        label: 'AccessKey secret',
        required: true,
        secret: true,
        where: 'shown once, next to the AccessKey ID, when it is created',
        format: _re(/^[A-Za-z0-9]{16,64}$/, 'must be an Alibaba Cloud AccessKey secret: 16 to 64 letters and digits'),
      },
      {
        key: 'region_id',
        label: 'Region',
        required: false,
        placeholder: 'cn-hangzhou',
        public: true,
        where: 'any Alibaba Cloud region id; cn-hangzhou when left empty',
        format: _re(/^[a-z]{2}-[a-z0-9-]{2,30}$/, 'must be an Alibaba Cloud region id such as cn-hangzhou or ap-southeast-1'),
      },
    ],
  },
  // caddy-dns/duckdns v0.5.0 → libdns/duckdns v0.3.0 (the account token; one TXT per duckdns.org name).
  {
    name: 'duckdns',
    display_name: 'Duck DNS',
    module: 'duckdns',
    docs_url: 'https://www.duckdns.org/spec.jsp',
    npm_ids: ['duckdns'],
    fields: [
      {
        key: 'api_token',
        label: 'Account token',
        required: true,
        placeholder: '00000000-0000-0000-0000-000000000000',
        secret: true,
        where: 'duckdns.org after signing in: the "token" shown at the top of the page',
        format: _uuid('a Duck DNS token'),
      },
      {
        key: 'override_domain',
        label: 'Duck DNS name to write instead (for a CNAME from your own domain)',
        required: false,
        placeholder: 'myname.duckdns.org',
        public: true,
        where: 'one of your duckdns.org names, when _acme-challenge of your own domain is a CNAME to it',
        format: _re(/^[a-z0-9-]{1,63}\.duckdns\.org$/i, 'must be one of your Duck DNS names such as myname.duckdns.org'),
      },
    ],
  },
  // caddy-dns/godaddy v1.1.1 → libdns/godaddy v1.1.0: key and secret joined as KEY:SECRET.
  {
    name: 'godaddy',
    display_name: 'GoDaddy',
    module: 'godaddy',
    docs_url: 'https://developer.godaddy.com/keys',
    npm_ids: ['godaddy'],
    fields: [
      {
        key: 'api_token',
        label: 'API key and secret (KEY:SECRET)',
        required: true,
        placeholder: 'key:secret',
        secret: true,
        where: 'developer.godaddy.com → API Keys → Create New API Key (Production), then join the key and the secret with a colon',
        format: _re(
          /^[A-Za-z0-9_]{8,64}:[A-Za-z0-9_]{8,64}$/,
          'must be a GoDaddy production key and its secret joined by a colon (KEY:SECRET), each 8 to 64 letters, digits or _',
        ),
      },
    ],
  },
  // caddy-dns/acmedns v0.6.0 → libdns/acmedns v0.5.0: the account /register returned.
  // acme-dns serves one TXT per account, so _acme-challenge.<host> is a CNAME to its fulldomain.
  {
    name: 'acmedns',
    display_name: 'acme-dns (your own server)',
    module: 'acmedns',
    docs_url: 'https://github.com/joohoi/acme-dns#register-endpoint',
    npm_ids: ['acmedns'],
    delegation: false,
    fields: [
      {
        key: 'server_url',
        label: 'acme-dns API address',
        required: true,
        placeholder: 'https://auth.example.com',
        public: true,
        where: "the address of your acme-dns server's API (its [api] section)",
        format: _url('the acme-dns API address'),
      },
      {
        key: 'username',
        label: 'Username',
        required: true,
        where: 'the "username" of the answer to POST /register',
        format: _uuid('the acme-dns username'),
      },
      {
        key: 'password',
        label: 'Password',
        required: true,
        secret: true,
        where: 'the "password" of the answer to POST /register',
        format: _re(/^[A-Za-z0-9_-]{40}$/, 'must be the acme-dns password: 40 characters of A-Z a-z 0-9 _ -'),
      },
      {
        key: 'subdomain',
        label: 'Subdomain',
        required: true,
        public: true,
        where: 'the "subdomain" of the answer to POST /register (the CNAME target is its "fulldomain")',
        format: _uuid('the acme-dns subdomain'),
      },
    ],
  },
  // caddy-dns/cloudns v1.1.0 → libdns/cloudns v1.1.0: an API user (auth-id) or sub-user (sub-auth-id) and its
  // password, sent as query parameters; the sub-user ID wins when both are set (its addAuthParams).
  {
    name: 'cloudns',
    display_name: 'ClouDNS',
    module: 'cloudns',
    docs_url: 'https://www.cloudns.net/wiki/article/42/',
    npm_ids: ['cloudns'],
    one_of_required: ['auth_id', 'sub_auth_id'],
    fields: [
      {
        key: 'auth_id',
        label: 'API user ID (or give the sub-user ID instead)',
        required: false,
        placeholder: '1234',
        public: true,
        where: 'ClouDNS → API & Resellers → API users → Add new user; the ID appears in the users table (a paid plan has the API)',
        format: _re(/^\d{1,10}$/, 'must be a ClouDNS API user ID (auth-id): 1 to 10 digits'),
      },
      {
        key: 'sub_auth_id',
        label: 'API sub-user ID (used instead of the user ID when given)',
        required: false,
        placeholder: '5678',
        public: true,
        where:
          'ClouDNS → API & Resellers → API sub-users → Add new sub-user (limited to the zones you give it); the ID appears in the sub-users table',
        format: _re(/^\d{1,10}$/, 'must be a ClouDNS API sub-user ID (sub-auth-id): 1 to 10 digits'),
      },
      {
        key: 'auth_password',
        label: 'API password (of that user or sub-user)',
        required: true,
        secret: true,
        where: 'the auth-password set when the API user or sub-user was created',
        format: _safe(6, 256, "the API user's or sub-user's password"),
      },
    ],
  },
  // caddy-dns/loopia v1.0.0 → libdns/loopia v1.0.0 (the XML-RPC API; Loopia may take up to 15 minutes to publish a change).
  {
    name: 'loopia',
    display_name: 'Loopia',
    module: 'loopia',
    docs_url: 'https://www.loopia.se/api/authentication/',
    npm_ids: ['loopia'],
    fields: [
      {
        key: 'username',
        label: 'API user name (ends in @loopiaapi)',
        required: true,
        placeholder: 'user@loopiaapi',
        public: true,
        where:
          'Loopia Customer Zone → Account settings → LoopiaAPI → Create API user (not your login), allowed getSubdomains, addSubdomain, removeSubdomain, getZoneRecords, addZoneRecord, removeZoneRecord',
        format: _re(/^[A-Za-z0-9._-]{1,64}@loopiaapi$/, 'must be a LoopiaAPI user name such as user@loopiaapi'),
      },
      {
        key: 'password',
        label: 'API user password',
        required: true,
        secret: true,
        where: 'the password set when the API user was created',
        format: _safe(6, 256, "the LoopiaAPI user's password"),
      },
      {
        key: 'customer',
        label: 'Customer number (resellers only: the customer whose domains these are)',
        required: false,
        public: true,
        where: "Loopia Reseller Zone → the customer's number; leave empty for your own domains",
        format: _re(/^[A-Za-z0-9-]{1,32}$/, 'must be a Loopia customer number: 1 to 32 letters, digits or -'),
      },
    ],
  },
  // caddy-dns/huaweicloud v1.0.0 → libdns/huaweicloud v1.0.0 (an AK/SK pair; the API at dns.<region>.myhuaweicloud.com).
  {
    name: 'huaweicloud',
    display_name: 'Huawei Cloud DNS',
    module: 'huaweicloud',
    docs_url: 'https://support.huaweicloud.com/intl/en-us/usermanual-ca/ca_01_0003.html',
    fields: [
      {
        key: 'access_key_id',
        label: 'Access key ID (AK)',
        required: true,
        where: 'Huawei Cloud console → My Credentials → Access Keys → Create Access Key, for a user with the DNS FullAccess policy',
        format: _re(
          /^[A-Za-z0-9]{16,64}$/,
          'must be a Huawei Cloud access key ID (AK): 16 to 64 letters and digits (20 as Huawei Cloud issues them)',
        ),
      },
      {
        key: 'secret_access_key',
        label: 'Secret access key (SK)',
        required: true,
        secret: true,
        where: 'the credentials.csv downloaded when the access key is created (it cannot be downloaded again)',
        format: _re(
          /^[A-Za-z0-9]{20,128}$/,
          'must be a Huawei Cloud secret access key (SK): 20 to 128 letters and digits (40 as Huawei Cloud issues them)',
        ),
      },
      {
        key: 'region_id',
        label: 'Region of the DNS API',
        required: false,
        placeholder: 'cn-south-1',
        public: true,
        where: 'a Huawei Cloud region id such as ap-southeast-1 or eu-west-101; cn-south-1 when left empty',
        format: _re(/^[a-z]{2}-[a-z]+-\d{1,3}$/, 'must be a Huawei Cloud region id such as cn-south-1, ap-southeast-1 or eu-west-101'),
      },
    ],
  },
  // caddy-dns/luadns v0.1.0 → libdns/luadns v0.2.0 (the REST API, basic auth with the account email and API key).
  {
    name: 'luadns',
    display_name: 'LuaDNS',
    module: 'luadns',
    docs_url: 'https://www.luadns.com/api.html',
    npm_ids: ['luadns'],
    fields: [
      {
        key: 'email',
        label: 'Account email',
        required: true,
        placeholder: 'you@example.com',
        public: true,
        where: 'the email address you sign in to LuaDNS with',
        format: _re(
          /^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,63}$/,
          'must be the LuaDNS account email, such as you@example.com',
        ),
      },
      {
        key: 'api_key',
        label: 'API key',
        required: true,
        secret: true,
        where: 'api.luadns.com → Account settings → enable API access, then the API key shown there',
        format: _re(/^[A-Za-z0-9]{16,128}$/, 'must be a LuaDNS API key: 16 to 128 letters and digits (32 as LuaDNS shows it)'),
      },
    ],
  },
]

export const DNS_PROVIDER_CATALOGUE: DnsProviderDefinition[] = _DECLARATIONS.map(_define)

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
  const oneOf = def.one_of_required
  if (oneOf && !oneOf.some((k) => credentials[k]))
    return `credentials.${oneOf[0]}: is required for ${def.name} unless ${oneOf
      .slice(1)
      .map((k) => `credentials.${k}`)
      .join(' or ')} is given`
  // A provider limited to a zone writes the delegated records there, so the delegation zone lies inside it.
  const delegation = credentials[CHALLENGE_DELEGATION]
  if (delegation && credentials.zone && !nameInZone(delegation, credentials.zone))
    return `credentials.${CHALLENGE_DELEGATION}: must lie inside the zone ${credentials.zone} that ${def.name} may update`
  return null
}

/** The name the TXT record goes to for a host whose challenge is delegated into `zone`. */
export function delegationTarget(domain: string, zone: string): string {
  return `${domain.toLowerCase().replace(/^\*\./, '')}.${zone.toLowerCase().replace(/\.$/, '')}`
}

/** The CNAME records to create for a host's names (a wildcard and its base share one). */
export function delegationRecords(domain: string, aliases: string[], zone: string): Array<{ name: string; type: 'CNAME'; value: string }> {
  const value = delegationTarget(domain, zone)
  const names = [...new Set([domain, ...aliases].map((n) => `_acme-challenge.${n.toLowerCase().replace(/^\*\./, '')}`))]
  return names.map((name) => ({ name, type: 'CNAME' as const, value }))
}

/**
 * The provider object the proxy's module loads: the declared fields under their
 * module JSON keys, the defaults, and the resolvers when the entry names them.
 * The module decodes strictly, so only declared keys are ever sent.
 */
export function dnsChallengeConfig(def: DnsProviderDefinition, stored: Record<string, string>): Record<string, unknown> {
  const provider: Record<string, string> = { name: def.module }
  for (const [key, value] of Object.entries(def.defaults ?? {})) provider[key] = value
  for (const f of def.declared) {
    const value = stored[f.key]
    if (f.panel_only || value === undefined || value === '') continue
    provider[f.json ?? f.key] = value
  }
  const resolvers = challengeResolvers(def, stored)
  const challenge: Record<string, unknown> = resolvers.length ? { provider, resolvers } : { provider }
  // Empty: Caddy's default wait (DEFAULT_PROPAGATION_SECONDS), so existing configurations stay as they were.
  if (stored[PROPAGATION_TIMEOUT]) challenge.propagation_timeout = `${Number(stored[PROPAGATION_TIMEOUT])}s`
  return challenge
}

/** The servers the propagation is checked at: the operator's, else the provider's own (RFC 2136: its server), else none (the zone's NS). */
export function challengeResolvers(def: DnsProviderDefinition, stored: Record<string, string>): string[] {
  const given = stored[PROPAGATION_RESOLVERS]
  return given ? _splitResolvers(given) : (def.resolvers?.(stored) ?? [])
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
