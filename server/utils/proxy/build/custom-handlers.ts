import type { HostSnapshot, Json } from './types'

// The escape hatch (docs/hosts.md, "Custom handlers (escape hatch)"): raw Caddy HTTP
// handlers an admin adds to one host, for what the panel has no field for. They are
// checked here (an allow-list of modules, walked to every depth) and then by the real
// proxy: a configuration it refuses is never applied (its /load is all or nothing)
// and the host change is rolled back.

/**
 * Where a host's custom handlers run (the host's chain: index.ts, HOST_HANDLER_ORDER):
 * - `after_security`: after every gate of the host (LAN gate, access list, ban check,
 *   AppSec, rate limit, basic auth, WAF, ForwardAuth), before the path rules; so they
 *   run for every request the gates let through, path rules included.
 * - `before_proxy`: after the path rules, just before the host's default upstream; so
 *   they run only for requests no path rule answered.
 */
export const CUSTOM_HANDLER_POINTS = ['after_security', 'before_proxy'] as const
export type CustomHandlerPoint = (typeof CUSTOM_HANDLER_POINTS)[number]

/**
 * The handler modules an admin may use. All are in the standard build (`caddy
 * list-modules`; the integration test checks each against the production binary).
 * Left out on purpose: file_server and templates (they read the proxy's files, its
 * certificates' keys among them), reverse_proxy (it reaches the proxy's admin API and
 * the engine's local API on loopback; a host's upstreams are target groups),
 * acme_server, authentication (the panel's access lists and ForwardAuth do that),
 * invoke and intercept (they run routes defined elsewhere), log_append (the access
 * log's fields are what the panel's log ingester reads), metrics, tracing, push,
 * and the panel's own security modules (crowdsec, appsec, waf, rate_limit), which a
 * snippet must not configure a second time behind the panel's back.
 */
export const CUSTOM_HANDLER_MODULES = [
  'copy_response_headers',
  'encode',
  'error',
  'headers',
  'map',
  'request_body',
  'rewrite',
  'static_response',
  'subroute',
  'timeouts',
  'vars',
] as const

/** Bounds on what one host may carry: the JSON text and the number of top-level handlers. */
export const CUSTOM_HANDLERS_MAX_BYTES = 32 * 1024
export const CUSTOM_HANDLERS_MAX_COUNT = 32

// Placeholders that read the proxy's environment (its bouncer key) or any file it can read.
const _SECRET_PLACEHOLDER = /\{\s*(env|file)\./i
// Headers the panel sets and reads back itself (the log ingester's rule tag, AppSec's threshold).
const _PANEL_HEADER = /^[-+]?x-panel-/i
// Matchers that look at the proxy's file system.
const _FORBIDDEN_MATCHERS = new Set(['file'])

/**
 * The first problem of a list of custom handlers, as a sentence that names the
 * handler (by its place) and what to change; null when the list may go to the proxy.
 */
export function customHandlersProblem(handlers: unknown[]): string | null {
  if (handlers.length > CUSTOM_HANDLERS_MAX_COUNT) return `at most ${CUSTOM_HANDLERS_MAX_COUNT} handlers`
  const size = Buffer.byteLength(JSON.stringify(handlers), 'utf8')
  if (size > CUSTOM_HANDLERS_MAX_BYTES) return `is ${size} bytes of JSON; at most ${CUSTOM_HANDLERS_MAX_BYTES} (32 KiB)`
  for (const [i, h] of handlers.entries()) {
    if (!h || typeof h !== 'object' || Array.isArray(h) || typeof (h as Json).handler !== 'string')
      return `handler ${i + 1}: must be a JSON object with a "handler" field naming its module, such as {"handler": "headers", ...}`
    const problem = _walk(h, `handler ${i + 1}`, false)
    if (problem) return problem
  }
  return null
}

function _walk(value: unknown, where: string, inMatch: boolean): string | null {
  if (typeof value === 'string') {
    if (_SECRET_PLACEHOLDER.test(value))
      return `${where}: the placeholders {env.*} and {file.*} are refused (they would put the proxy's environment or files in an answer)`
    if (_PANEL_HEADER.test(value)) return `${where}: "${value}" is refused: headers named X-Panel-* are the panel's own`
    return null
  }
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = _walk(item, where, inMatch)
      if (problem) return problem
    }
    return null
  }
  if (!value || typeof value !== 'object') return null
  const obj = value as Json
  if ('handler' in obj) {
    const name = obj.handler
    if (typeof name !== 'string') return `${where}: "handler" must be a module name`
    if (!(CUSTOM_HANDLER_MODULES as readonly string[]).includes(name))
      return `${where}: the module "${name}" is not allowed in custom handlers; allowed: ${CUSTOM_HANDLER_MODULES.join(', ')}`
  }
  for (const [key, child] of Object.entries(obj)) {
    // The panel finds its own routes by @id (unknown-host.ts); a snippet's could shadow or be mistaken for one.
    if (key.startsWith('@')) return `${where}: the key "${key}" is refused (the panel names its own routes with @id)`
    // The panel tags responses with them and its log ingester reads them back (path-rules.ts).
    if (_PANEL_HEADER.test(key)) return `${where}: the header "${key}" is refused: headers named X-Panel-* are the panel's own`
    if (inMatch && _FORBIDDEN_MATCHERS.has(key)) return `${where}: the "${key}" matcher is refused (it reads the proxy's files)`
    const problem = _walk(child, where, key === 'match' || (inMatch && key === 'not'))
    if (problem) return problem
  }
  return null
}

/**
 * The host's custom handlers for one point of its chain, copied (the snapshot's
 * values never end up shared inside the configuration). A list that fails the check
 * (it was stored before a stricter rule) is left out with a warning, not pushed.
 */
export function customHandlersAt(host: HostSnapshot, point: CustomHandlerPoint, warnings: string[]): Json[] {
  const handlers = host.custom_handlers ?? []
  if (!handlers.length || host.custom_handlers_at !== point) return []
  const problem = customHandlersProblem(handlers)
  if (problem) {
    warnings.push(`host ${host.domain}: custom handlers left out: ${problem}`)
    return []
  }
  return structuredClone(handlers) as Json[]
}
