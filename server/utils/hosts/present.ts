import type { hosts, rules, targetGroups, wafExclusions } from '../../../db/schema'
import type { CertificateSummary } from './cert-expiry'
import { hostFromRow, ruleFromRow, targetGroupFromRow, timestampsOf, wafExclusionFromRow } from './records'
import {
  CRS_DEFAULT_CONTENT_TYPES,
  WAF_DEFAULT_FAMILIES,
  WAF_FAMILIES,
  WAF_LIMIT_ACTIONS,
  WAF_LIMIT_BOUNDS,
  WAF_PROFILE_DEFAULTS,
  WAF_PROFILES,
  WAF_VIRTUAL_PATCHES,
} from '../proxy/build/waf-rules'

export function presentHost(h: typeof hosts.$inferSelect, certificate: CertificateSummary | null) {
  const host = hostFromRow(h)
  // The escape hatch in use (docs/hosts.md): the hosts list and the host page mark such a host.
  return { ...host, ...timestampsOf(h), certificate, custom_handler_count: host.custom_handlers.length }
}

export function presentTargetGroup(g: typeof targetGroups.$inferSelect) {
  return { ...targetGroupFromRow(g), ...timestampsOf(g) }
}

export function presentRule(r: typeof rules.$inferSelect) {
  return { ...ruleFromRow(r), ...timestampsOf(r) }
}

export function presentWafExclusion(e: typeof wafExclusions.$inferSelect) {
  return { ...wafExclusionFromRow(e), created_at: e.createdAt }
}

/** What the host form and API clients choose from: profiles and their defaults, families, patches. */
export function presentWafCatalogue() {
  return {
    profiles: WAF_PROFILES.map((id) => ({
      id,
      body_limit_kb: WAF_PROFILE_DEFAULTS[id].bodyLimitKb,
      body_max_args: WAF_PROFILE_DEFAULTS[id].maxArgs || null,
      json_max_depth: WAF_PROFILE_DEFAULTS[id].jsonMaxDepth || null,
      body_limit_action: WAF_PROFILE_DEFAULTS[id].limitAction,
    })),
    limit_actions: [...WAF_LIMIT_ACTIONS],
    limit_bounds: {
      body_limit_kb: [...WAF_LIMIT_BOUNDS.bodyLimitKb],
      body_max_args: [...WAF_LIMIT_BOUNDS.maxArgs],
      json_max_depth: [...WAF_LIMIT_BOUNDS.jsonMaxDepth],
    },
    families: WAF_FAMILIES.map((f) => ({ id: f.id, label: f.label, crs_rule_ids: [...f.crsRuleIds] })),
    default_families: [...WAF_DEFAULT_FAMILIES],
    virtual_patches: WAF_VIRTUAL_PATCHES.map((p) => ({ rule_id: p.id, cve: p.cve, title: p.title })),
    crs_default_content_types: [...CRS_DEFAULT_CONTENT_TYPES],
  }
}
