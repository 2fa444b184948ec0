// What a change did or would do, in words: the API keeps its field names and
// part names (snake_case, stable for scripts); the screens show these instead.

import { fieldLabel } from './fields'

const _ACRONYMS: Record<string, string> = {
  waf: 'WAF',
  tls: 'TLS',
  lan: 'LAN',
  acme: 'ACME',
  dns: 'DNS',
  url: 'URL',
  ip: 'IP',
  ips: 'IPs',
  http: 'HTTP',
  https: 'HTTPS',
  ca: 'CA',
  appsec: 'AppSec',
  oidc: 'OIDC',
  id: '',
  api: 'API',
  cidr: 'CIDR',
  hsts: 'HSTS',
  sni: 'SNI',
  udp: 'UDP',
  tcp: 'TCP',
}

/** Fields whose generic wording would read badly. */
const _FIELD_WORDS: Record<string, string> = {
  waf_enabled: 'WAF',
  enabled: 'Enabled',
  target_group_id: 'Target group',
  access_list_id: 'Access list',
  host_id: 'Host',
  rule_id: 'WAF rule',
  tls_dns_provider: 'DNS provider',
  tls_acme_ca_url: 'ACME directory URL',
  custom_handlers_at: 'Where custom handlers run',
  // Streams: the Streams form's words.
  listen_port_end: 'Last port of the range',
  udp_probe_hex: 'UDP health probe',
  engine_down_refuse: 'Refuse every connection while the security engine is down',
}

/** A field or setting name in words: `waf_mode` → "WAF mode", `acme.ca_url` → its Settings label. */
export function fieldWords(field: string): string {
  if (_FIELD_WORDS[field]) return _FIELD_WORDS[field]
  const label = fieldLabel(field)
  if (label) return label
  const words = field
    .split(/[._]/)
    .map((w) => _ACRONYMS[w] ?? w)
    .filter(Boolean)
  const text = words.join(' ')
  return text ? text[0]!.toUpperCase() + text.slice(1) : field
}

/** A stored value in words: on/off, "none", lists joined; objects stay JSON (targets, health checks). */
export function valueWords(v: unknown): string {
  if (v === undefined) return ''
  if (v === null || v === '') return 'none'
  if (v === true) return 'on'
  if (v === false) return 'off'
  if (Array.isArray(v))
    return v.length ? v.map((x) => (typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x))).join(', ') : 'none'
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
}

/** What kind of object a part holds; parts whose labels already say it have none. */
const _PART_WORDS: Record<string, string> = {
  hosts: 'Host',
  target_groups: 'Target group',
  access_lists: 'Access list',
  streams: 'Stream',
  settings: 'Setting',
}

interface _Change {
  part: string
  label: string
  change: string
  fields: unknown[]
}

/** An object by kind and name: `Host app.example.test`, `Setting ACME email`. */
export function objectName(c: { part: string; label: string }): string {
  const label = c.part === 'settings' ? fieldWords(c.label) : c.label
  const kind = _PART_WORDS[c.part]
  return kind ? `${kind} ${label}` : label
}

/** One object's change in words: `Host app.example.test changed`, `host a.example.test now behind access list "staff"`. */
export function objectWords(c: _Change): string {
  if (c.part === 'host_access_lists')
    return c.change === 'removed' ? c.label.replace(' behind ', ' no longer behind ') : c.label.replace(' behind ', ' now behind ')
  return `${objectName(c)} ${c.change}`
}

/** A revision's summary entry (field names only): `Host app.example.test changed: WAF, WAF mode`. */
export function summaryWords(s: { part: string; label: string; change: string; fields: string[] }): string {
  const what = objectWords(s)
  if (s.change !== 'changed' || !s.fields.length || s.part === 'settings') return what
  return `${what}: ${s.fields.map(fieldWords).join(', ')}`
}

/**
 * A revision's stored reason in words. Reasons are written by the server in words already, except
 * the settings push, which lists the keys it saw ("settings changed: acme.email, acme.ca_url"):
 * those are shown by their Settings labels.
 */
export function reasonWords(reason: string | null | undefined): string {
  const m = /^settings changed: (.+)$/.exec(reason ?? '')
  if (!m) return reason ?? ''
  return `Settings changed: ${m[1]!
    .split(', ')
    .map((k) => fieldWords(k))
    .join(', ')}`
}
