import { nextTick, reactive } from 'vue'
import { ApiError } from './api'

// The API words a validation error as "<field path>: <problem>" (server/utils/core/validate.ts).
// This is the one mapping from those paths to the names the forms show; every form
// uses it, through useFieldErrors below. `*` stands for a list index (shown 1-based).
const LABELS: Record<string, string | ((index: number) => string)> = {
  // Hosts
  domain: 'Domain',
  aliases: 'Aliases',
  'aliases.*': (i) => `Alias ${i + 1}`,
  target_group_id: 'Target group',
  tls_mode: 'TLS mode',
  tls_challenge: 'ACME challenge',
  tls_email: 'ACME email',
  tls_dns_provider: 'DNS provider',
  tls_acme_ca_url: 'ACME directory URL',
  rate_limit_rps: 'Requests per second',
  rate_limit_burst: 'Burst',
  waf_mode: 'WAF mode',
  waf_profile: 'WAF profile',
  waf_families: 'Attack families',
  waf_body_limit_kb: 'Body limit',
  waf_body_max_args: 'Maximum arguments',
  waf_json_max_depth: 'Maximum JSON depth',
  waf_body_limit_action: 'Over the limit',
  waf_allowed_content_types: 'Allowed content types',
  custom_handlers: 'Custom handlers',
  'custom_handlers.*': (i) => `Custom handler ${i + 1}`,
  custom_handlers_at: 'Where they run',
  kind: 'What this host does',
  redirect_to: 'Redirect to',
  redirect_status: 'Redirect status',
  static_status: 'Status',
  static_content_type: 'Content type',
  static_body: 'Page',
  maintenance_retry_after: 'Retry after',
  maintenance_content_type: 'Content type',
  maintenance_body: 'Page',
  maintenance_bypass: 'Addresses that still reach the site',
  'maintenance_bypass.*': (i) => `Address ${i + 1}`,
  // Target groups
  name: 'Name',
  scheme: 'Scheme',
  lb_policy: 'Load balancing',
  targets: 'Targets',
  'targets.*': (i) => `Target ${i + 1}`,
  'targets.*.address': (i) => `Target ${i + 1} address`,
  'targets.*.weight': (i) => `Target ${i + 1} weight`,
  health_check: 'Health check',
  'health_check.path': 'Health check path',
  'health_check.interval_seconds': 'Health check interval',
  'health_check.expect_status': 'Expected status',
  // Streams (docs/streams.md)
  protocol: 'Protocol',
  listen_port: 'Listen port',
  listen_port_end: 'to port',
  range_mapping: 'How the range reaches the targets',
  tls_sni: 'Server names (TLS SNI)',
  'tls_sni.*': (i) => `Server name ${i + 1}`,
  proxy_protocol: 'PROXY protocol to the upstream',
  accept_proxy_protocol: 'Accept PROXY protocol from trusted proxies',
  lan_only: 'LAN only',
  access_list_id: 'Access list',
  bouncer_enabled: 'Block banned sources',
  engine_down_refuse: 'Refuse every connection while the security engine is down',
  udp_probe_hex: 'UDP health probe',
  // Certificates
  cert_pem: 'Certificate PEM',
  key_pem: 'Private key PEM',
  chain_pem: 'Chain PEM',
  // Security
  value: 'Address or range',
  duration: 'Duration',
  reason: 'Reason',
  ip: 'IP address',
  'country code': 'Country code',
  inbound_threshold: 'Inbound anomaly threshold',
  outbound_threshold: 'Outbound anomaly threshold',
  // Users and account
  email: 'Email',
  password: 'Password',
  role: 'Role',
  code: 'Code',
  // Settings (their units are in SETTING_UNITS)
  'logs.retention_days': 'Keep log rows for',
  'logs.max_entries': 'Most log rows kept',
  'logs.text_index': 'Index log text for free-text search (about 40 % more disk)',
  'logs.waf_audit_max_bytes': 'WAF audit log size limit',
  'backup.schedule': 'Backup schedule (cron, UTC)',
  'backup.retention_days': 'Keep backups for',
  'security_engine.ticker_interval': 'Ban poll interval of the proxy',
  'proxy.trusted_proxies': 'Trusted proxies in front (CDN, load balancer)',
  'proxy.client_ip_headers': 'Client address headers',
  'proxy.compression': 'Compress answers (zstd or gzip)',
  'proxy.compression_types': 'Media types to compress',
  'proxy.compression_minimum_bytes': 'Smallest answer to compress',
  'proxy.error_pages': 'Refusal and error pages with a request id',
  'proxy.unknown_host_answer': 'Answer to a host name no host has',
  error_pages: 'Refusal and error pages',
  'proxy.error_page_message': 'Message on the refusal and error pages',
  error_page_message: 'Message on the pages',
  compression: 'Compression',
  header_rules: 'Header rules',
  'header_rules.*': (i) => `Header rule ${i + 1}`,
  'header_rules.*.name': (i) => `Header rule ${i + 1} name`,
  'header_rules.*.value': (i) => `Header rule ${i + 1} value`,
  'header_rules.*.direction': (i) => `Header rule ${i + 1} direction`,
  'header_rules.*.action': (i) => `Header rule ${i + 1} action`,
  upstream_host: 'Host sent to the upstream',
  hsts: 'HSTS',
  'hsts.max_age': 'HSTS lifetime',
  'hsts.include_subdomains': 'Include subdomains',
  'hsts.preload': 'Preload',
  security_headers: 'Security headers',
  csp: 'Content Security Policy',
  'csp.mode': 'Policy mode',
  'csp.policy': 'Policy',
  'acme.email': 'Default ACME email',
  'acme.ca_url': 'Default ACME directory URL',
  'appsec.inbound_threshold': 'Inbound anomaly threshold',
  'appsec.outbound_threshold': 'Outbound anomaly threshold',
  'auth.strict_sessions': 'Strict session mode',
  'oidc.issuer': 'Issuer URL',
  'oidc.client_id': 'Client id',
  'oidc.client_secret': 'Client secret',
  'oidc.allowed_emails': 'Allowed emails',
  'oidc.require_email_verified': 'Require a verified email',
  'oidc.display_name': 'Sign-in button label',
  'oidc.groups_claim': 'Groups claim',
  'oidc.group_roles': 'Roles by group',
  'oidc.allowed_groups': 'Groups allowed to sign in',
  'smtp.host': 'SMTP server',
  'smtp.port': 'SMTP port',
  'smtp.username': 'SMTP user name',
  'smtp.password': 'SMTP password',
  'smtp.from': 'Sender address',
  'geoip.country_url': 'Country database URL',
  'geoip.asn_url': 'AS number database URL',
  'revisions.retention_count': 'Configuration revisions kept',
  // Who and where may enter (docs/access-control.md); a list item's error names its rule (the first index).
  geo_policy: 'Geo rules',
  'geo_policy.rules': 'Geo rules',
  'geo_policy.rules.*': (i) => `Geo rule ${i + 1}`,
  'geo_policy.rules.*.action': (i) => `Geo rule ${i + 1}`,
  'geo_policy.rules.*.countries': (i) => `Geo rule ${i + 1} countries`,
  'geo_policy.rules.*.countries.*': (i) => `Geo rule ${i + 1} countries`,
  'geo_policy.rules.*.continents': (i) => `Geo rule ${i + 1} continents`,
  'geo_policy.rules.*.continents.*': (i) => `Geo rule ${i + 1} continents`,
  'geo_policy.rules.*.asns': (i) => `Geo rule ${i + 1} AS numbers`,
  'geo_policy.rules.*.asns.*': (i) => `Geo rule ${i + 1} AS numbers`,
  'geo_policy.rules.*.cidrs': (i) => `Geo rule ${i + 1} addresses and ranges`,
  'geo_policy.rules.*.cidrs.*': (i) => `Geo rule ${i + 1} addresses and ranges`,
  'geo_policy.rules.*.access_list_id': (i) => `Geo rule ${i + 1} access list`,
  'geo_policy.default': 'Anyone no rule matches',
  'geo_policy.unknown_address': 'An address the country database does not place',
  auth_allowed_users: 'Users who may enter',
  'auth_allowed_users.*': 'Users who may enter',
  auth_allowed_groups: 'Groups who may enter',
  'auth_allowed_groups.*': 'Groups who may enter',
  groups: 'Groups',
  'groups.*': 'Groups',
}

/** The unit shown after a setting's field. */
export const SETTING_UNITS: Record<string, string> = {
  'logs.retention_days': 'days',
  'logs.max_entries': 'rows',
  'logs.waf_audit_max_bytes': 'bytes',
  'backup.retention_days': 'days',
  'security_engine.ticker_interval': 'Go duration: 10s, 1m',
  'proxy.trusted_proxies': 'comma separated',
  'proxy.client_ip_headers': 'comma separated',
  'proxy.compression_types': 'comma separated',
  'proxy.compression_minimum_bytes': 'bytes',
  'proxy.unknown_host_answer': '404, 421 or close',
  'oidc.allowed_emails': 'comma separated',
  'revisions.retention_count': 'newest first; the oldest go',
}
/** Titles of the settings groups (the part of the key before the dot). */
export const SETTING_GROUPS: Record<string, string> = {
  logs: 'Logs',
  backup: 'Backups',
  security_engine: 'Security engine',
  proxy: 'Proxy',
  acme: 'Certificates (ACME)',
  appsec: 'AppSec',
  auth: 'Sessions',
  oidc: 'Single sign-on (OIDC)',
  smtp: 'Email (SMTP)',
  geoip: 'Geolocation',
  revisions: 'Revisions (undo history)',
}

const PATH = /^([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*|country code): (.+)$/s

/** The API path with its indexes as `*`, and the first index (for "Target 2 address"). */
function pattern(path: string): { key: string; index: number } {
  let index = -1
  const key = path
    .split('.')
    .map((part) => {
      if (/^\d+$/.test(part)) {
        if (index < 0) index = Number(part)
        return '*'
      }
      return part
    })
    .join('.')
  return { key, index }
}

/** The name an operator knows a field by; null for a path the mapping does not know. */
export function fieldLabel(path: string): string | null {
  const { key, index } = pattern(path)
  const label = LABELS[key]
  if (label === undefined) return null
  return typeof label === 'function' ? label(index) : label
}

/** "<path>: <problem>" split into its parts with the human label, or null when the text names no known field. */
export function parseFieldError(text: string): { path: string; label: string; problem: string } | null {
  // Some checks name a list item as `rules[0]` (server/utils/access/geo-references.ts): the same path as `rules.0`.
  const m = PATH.exec(text.replace(/^[a-z_][\w.[\]]*(?=: )/, (p) => p.replace(/\[(\d+)\]/g, '.$1')))
  if (!m) return null
  const label = fieldLabel(m[1]!)
  return label ? { path: m[1]!, label, problem: m[2]! } : null
}

/** An error text with its field path replaced by the label ("targets.0.address: …" → "Target 1 address: …"). */
export function humanizeError(text: string): string {
  const f = parseFieldError(text)
  return f ? `${f.label}: ${f.problem}` : text
}

let forms = 0

/**
 * The errors of one form, keyed by API field path. Inputs carry `v-bind="fields.attrs(path)"`
 * (their name, aria-invalid, aria-describedby) and a <FieldError> beside them; the form
 * listens with `@input="fields.clear"` and `@change="fields.clear"`, so an error goes as soon
 * as its field changes. `show(error)` places a refusal at its field and focuses that field;
 * it returns false when the form has no such field (the caller then shows a banner).
 */
export function useFieldErrors() {
  const id = `form${++forms}`
  const errors = reactive<Record<string, string>>({})
  let formEl: HTMLElement | null = null
  const control = (path: string) => formEl?.querySelector<HTMLElement>(`[name="${CSS.escape(path)}"]`) ?? null
  return {
    errors,
    bind(el: unknown) {
      formEl = el instanceof HTMLElement ? el : null
    },
    attrs(path: string) {
      return {
        name: path,
        'aria-invalid': errors[path] ? 'true' : undefined,
        'aria-describedby': errors[path] ? `${id}-${path}-error` : undefined,
      }
    },
    errorId: (path: string) => `${id}-${path}-error`,
    show(error: unknown): boolean {
      if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 409)) return false
      const f = parseFieldError(error.message)
      if (!f) return false
      // A list edited as one field (a rule's ranges, its countries) takes the error of any of its items.
      const path = control(f.path) ? f.path : f.path.replace(/\.\d+$/, '')
      if (!control(path)) return false
      errors[path] = `${f.label}: ${f.problem}`
      nextTick(() => control(path)?.focus())
      return true
    },
    clear(event: Event) {
      const name = (event.target as HTMLInputElement | null)?.name
      if (name && errors[name]) delete errors[name]
    },
    reset() {
      for (const k of Object.keys(errors)) delete errors[k]
    },
  }
}
export type FieldErrors = ReturnType<typeof useFieldErrors>
