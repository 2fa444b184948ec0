import { hostHasRuleResponseHeaders, requestHeaderOps, responseHeaderOps } from './headers'
import type { HostSnapshot, Json, RuleSnapshot } from './types'

// Header rules of a path rule (docs/hosts.md, "Header rules"): the host's own rules
// first, then the path rule's, so a rule overrides a host header for its paths.
//
// Request side: the host's request headers handler runs before the path rules, so the
// rule's handler, inside its route, simply applies after it.
//
// Response side: the host's handler is deferred and wraps the whole chain, so Caddy
// applies it AFTER anything inside (the outermost writer writes the header last) and
// the host would win. So once a rule of the host has response rules, the host's handler
// is made to skip responses that carry the rule tag (X-Panel-Rule-Id, set at the start
// of every rule route; the upstream's own copy is dropped), and every rule route of the
// host applies the host's operations followed by its own (headers.ts,
// withRuleHeadersRequire). A host without such a rule keeps its configuration byte for byte.

/**
 * The handlers a rule route runs between its tag and its action. Request headers only
 * where the request goes upstream (`proxy`); response headers on any answer (the
 * upstream's, a redirect, a fixed response).
 */
export function ruleHeaderHandlers(rule: RuleSnapshot, host: HostSnapshot, rulesOfHost: RuleSnapshot[]): Json[] {
  const out: Json[] = []
  const request = rule.action === 'proxy' ? requestHeaderOps(rule.header_rules ?? []) : null
  if (request) out.push({ handler: 'headers', request })
  if (hostHasRuleResponseHeaders(rulesOfHost)) {
    const response = responseHeaderOps(host, rule.header_rules ?? [])
    if (response) out.push({ handler: 'headers', response: { ...response, deferred: true } })
  }
  return out
}
