import { buildEncodeHandler, hostCompresses } from './encode'
import type { HostSnapshot, Json, ProxySnapshot, Route, RuleSnapshot } from './types'

// Header rules of a host (docs/hosts.md, "Header rules"), as Caddy `headers` handlers.
// The values were validated at the API (no braces, no control characters); the
// builder only arranges them.

type Ops = { set: Record<string, string[]>; add: Record<string, string[]>; delete: string[] }

/** The security-headers preset: what a site served through the panel should send by default. */
export const SECURITY_HEADERS: Record<string, string> = {
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'SAMEORIGIN',
  'Referrer-Policy': 'strict-origin-when-cross-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), interest-cohort=()',
}

function _emptyOps(): Ops {
  return { set: {}, add: {}, delete: [] }
}

/** Adds one rule; a later `set` of the same name (any case) replaces an earlier one. */
function _apply(ops: Ops, action: 'set' | 'add' | 'remove', name: string, value: string | null) {
  const same = (k: string) => k.toLowerCase() === name.toLowerCase()
  if (action === 'remove') {
    if (!ops.delete.some(same)) ops.delete.push(name)
    return
  }
  const target = action === 'set' ? ops.set : ops.add
  const key = Object.keys(target).find(same) ?? name
  target[key] = action === 'set' ? [value!] : [...(target[key] ?? []), value!]
}

function _opsJson(ops: Ops): Json | null {
  const out: Json = {}
  if (Object.keys(ops.set).length) out.set = ops.set
  if (Object.keys(ops.add).length) out.add = ops.add
  if (ops.delete.length) out.delete = ops.delete
  return Object.keys(out).length ? out : null
}

export function hstsValue(hsts: NonNullable<HostSnapshot['hsts']>): string {
  return [`max-age=${hsts.max_age}`, ...(hsts.include_subdomains ? ['includeSubDomains'] : []), ...(hsts.preload ? ['preload'] : [])].join(
    '; ',
  )
}

/**
 * The response headers the client gets: presets first, then the host's rules (a rule
 * naming the same header wins). Deferred, so they apply to whatever answers: the
 * upstream, a path rule, a refusal. HSTS only on a host served over HTTPS: a browser
 * ignores it over plain HTTP, and the plain server of a TLS host only redirects.
 */
export function buildResponseHeadersHandler(host: HostSnapshot): Json | null {
  const response = responseHeaderOps(host)
  return response ? { handler: 'headers', response: { ...response, deferred: true } } : null
}

type RuleOfHeaders = { direction: 'request' | 'response'; action: 'set' | 'add' | 'remove'; name: string; value: string | null }

/** The host's response operations, then `extra` (a path rule's): a later `set` of the same name wins. */
export function responseHeaderOps(host: HostSnapshot, extra: RuleOfHeaders[] = []): Json | null {
  const ops = _emptyOps()
  if (host.hsts && host.tls_mode !== 'none') _apply(ops, 'set', 'Strict-Transport-Security', hstsValue(host.hsts))
  if (host.security_headers) for (const [name, value] of Object.entries(SECURITY_HEADERS)) _apply(ops, 'set', name, value)
  if (host.csp)
    _apply(ops, 'set', host.csp.mode === 'enforce' ? 'Content-Security-Policy' : 'Content-Security-Policy-Report-Only', host.csp.policy)
  for (const rule of [...(host.header_rules ?? []), ...extra])
    if (rule.direction === 'response') _apply(ops, rule.action, rule.name, rule.value)
  return _opsJson(ops)
}

/** The request operations of a list of rules (a path rule's), or null. */
export function requestHeaderOps(list: RuleOfHeaders[]): Json | null {
  const ops = _emptyOps()
  for (const rule of list) if (rule.direction === 'request') _apply(ops, rule.action, rule.name, rule.value)
  return _opsJson(ops)
}

/**
 * The request headers the upstream gets, and its Host. After ForwardAuth, so the panel
 * judges the request the client sent; Caddy's `headers` handler applies a Host set to
 * the request itself, which the reverse proxy then sends to the upstream.
 */
export function buildRequestHeadersHandler(host: HostSnapshot): Json | null {
  const ops = _emptyOps()
  if (host.upstream_host) _apply(ops, 'set', 'Host', host.upstream_host)
  for (const rule of host.header_rules ?? []) if (rule.direction === 'request') _apply(ops, rule.action, rule.name, rule.value)
  const request = _opsJson(ops)
  return request ? { handler: 'headers', request } : null
}

/** The request headers step of the chain: after ForwardAuth, so the panel judges the request the client sent. */
export function buildRequestHeaders(host: HostSnapshot): Json[] {
  const handler = buildRequestHeadersHandler(host)
  return handler ? [handler] : []
}

/**
 * The steps right after the static gates, each a route of its own that wraps everything
 * after it: compression (the WAF and the bouncer see plain bytes, the client gets them
 * compressed), then the response headers (deferred: applied to whatever answers).
 */
export function buildWrappingRoutes(
  step: 'encode' | 'response_headers',
  host: HostSnapshot,
  snapshot: ProxySnapshot,
  warnings: string[],
): Route[] {
  if (step === 'encode') {
    const encode = hostCompresses(host, snapshot.compression) && buildEncodeHandler(snapshot.compression)
    return encode ? [{ handle: [encode] }] : []
  }
  if (host.hsts && host.tls_mode === 'none') warnings.push(`host ${host.domain}: HSTS is not sent, the host is served over plain HTTP only`)
  const response = buildResponseHeadersHandler(host)
  return response ? [{ handle: [withRuleHeadersRequire(response, host, snapshot)] }] : []
}

/** Whether a host's response headers move into its rule routes (rule-headers.ts explains why). */
export function hostHasRuleResponseHeaders(rules: RuleSnapshot[]): boolean {
  return rules.some((rule) => (rule.header_rules ?? []).some((r) => r.direction === 'response'))
}

/**
 * The host's deferred response handler, skipping the answers of its rules when they carry
 * response headers (they apply the host's then their own); a null header in `require`
 * matches only when the header (the rule tag) is absent.
 */
function withRuleHeadersRequire(handler: Json, host: HostSnapshot, snapshot: ProxySnapshot): Json {
  if (!hostHasRuleResponseHeaders(snapshot.rules.filter((r) => r.host_id === host.id))) return handler
  return { ...handler, response: { ...(handler.response as Json), require: { headers: { 'X-Panel-Rule-Id': null } } } }
}
