import { buildUpstreamHandler } from './load-balancer'
import { ruleHeaderHandlers } from './rule-headers'
import type { HostSnapshot, Json, Route, RuleSnapshot, TargetGroupSnapshot } from './types'

export const RULE_ID_HEADER = 'X-Panel-Rule-Id'

export function sortRules(rules: RuleSnapshot[]): RuleSnapshot[] {
  return [...rules].sort((a, b) => a.priority - b.priority || a.id - b.id)
}

/**
 * One route per rule (match path, and method when given), terminal. Its first
 * handler tags the RESPONSE with the rule id: Caddy's access log records request
 * headers as the client sent them (it logs a copy taken before any handler runs),
 * so a request-header tag would never show, while a client could send a forged
 * one; response headers are logged as sent (resp_headers), and the log ingester
 * reads the tag there. Seen against the stock 2.6.2, see docs/api.md.
 */
export function buildRuleRoute(
  rule: RuleSnapshot,
  host: HostSnapshot,
  groups: Map<number, TargetGroupSnapshot>,
  warnings: string[],
  rulesOfHost: RuleSnapshot[] = [rule],
): Route | null {
  const matcher: Json = { path: [rule.path] }
  if (rule.methods.length) matcher.method = [...rule.methods].sort()
  const tag = { handler: 'headers', response: { set: { [RULE_ID_HEADER]: [String(rule.id)] } } }
  let action: Json
  if (rule.action === 'proxy') {
    const groupId = rule.target_group_id ?? host.target_group_id
    const group = groupId === null ? undefined : groups.get(groupId)
    if (!group) {
      warnings.push(`rule ${rule.id}: target group ${rule.target_group_id} is missing; rule skipped`)
      return null
    }
    action = buildUpstreamHandler(group, warnings)
  } else if (rule.action === 'redirect') {
    action = { handler: 'static_response', status_code: rule.redirect_status ?? 302, headers: { Location: [rule.redirect_url ?? '/'] } }
  } else {
    action = { handler: 'static_response', status_code: rule.respond_status ?? 200, body: rule.respond_body ?? '' }
  }
  return { match: [matcher], handle: [tag, ...ruleHeaderHandlers(rule, host, rulesOfHost), action], terminal: true }
}

/** The host's default route: no rule tag; the upstream's own copy of the tag is dropped. */
export function buildDefaultRoute(group: TargetGroupSnapshot, warnings: string[]): Route {
  return { handle: [buildUpstreamHandler(group, warnings)] }
}
