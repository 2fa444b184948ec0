import type { hosts, rules, targetGroups, wafExclusions } from '../../../db/schema'
import type { CertificateSummary } from './cert-expiry'
import {
  CRS_DEFAULT_CONTENT_TYPES, WAF_DEFAULT_FAMILIES, WAF_FAMILIES, WAF_LIMIT_ACTIONS, WAF_LIMIT_BOUNDS, WAF_PROFILE_DEFAULTS, WAF_PROFILES, WAF_VIRTUAL_PATCHES,
} from '../proxy/build/waf-rules'

export function presentHost(h: typeof hosts.$inferSelect, certificate: CertificateSummary | null) {
  return {
    id: h.id, domain: h.domain, aliases: h.aliases, target_group_id: h.targetGroupId, enabled: h.enabled,
    tls_mode: h.tlsMode, tls_challenge: h.tlsChallenge, tls_email: h.tlsEmail, tls_dns_provider: h.tlsDnsProvider,
    tls_acme_ca_url: h.tlsAcmeCaUrl, lan_only: h.lanOnly, true_detect_mode: h.trueDetectMode, engine_down_refuse: h.engineDownRefuse, auth_required: h.authRequired,
    waf_enabled: h.wafEnabled, waf_mode: h.wafMode, rate_limit_enabled: h.rateLimitEnabled, rate_limit_rps: h.rateLimitRps,
    rate_limit_burst: h.rateLimitBurst, bouncer_enabled: h.bouncerEnabled,
    waf_profile: h.wafProfile, waf_families: h.wafFamilies, waf_body_limit_kb: h.wafBodyLimitKb, waf_body_max_args: h.wafBodyMaxArgs,
    waf_json_max_depth: h.wafJsonMaxDepth, waf_body_limit_action: h.wafBodyLimitAction, waf_allowed_content_types: h.wafAllowedContentTypes,
    created_at: h.createdAt, updated_at: h.updatedAt,
    certificate,
  }
}

export function presentTargetGroup(g: typeof targetGroups.$inferSelect) {
  return {
    id: g.id, name: g.name, targets: g.targets, scheme: g.scheme, lb_policy: g.lbPolicy,
    health_check: g.healthCheck ?? null, tls_skip_verify: g.tlsSkipVerify, created_at: g.createdAt, updated_at: g.updatedAt,
  }
}

export function presentRule(r: typeof rules.$inferSelect) {
  return {
    id: r.id, host_id: r.hostId, priority: r.priority, path: r.path, methods: r.methods, action: r.action,
    target_group_id: r.targetGroupId, redirect_url: r.redirectUrl, redirect_status: r.redirectStatus,
    respond_status: r.respondStatus, respond_body: r.respondBody, created_at: r.createdAt, updated_at: r.updatedAt,
  }
}

export function presentWafExclusion(e: typeof wafExclusions.$inferSelect) {
  return {
    id: e.id, host_id: e.hostId, rule_id: e.ruleId, path: e.path, argument: e.argument, note: e.note,
    source_log_id: e.sourceLogId, created_at: e.createdAt,
  }
}

/** What the host form and API clients choose from: profiles and their defaults, families, patches. */
export function presentWafCatalogue() {
  return {
    profiles: WAF_PROFILES.map((id) => ({
      id, body_limit_kb: WAF_PROFILE_DEFAULTS[id].bodyLimitKb, body_max_args: WAF_PROFILE_DEFAULTS[id].maxArgs || null,
      json_max_depth: WAF_PROFILE_DEFAULTS[id].jsonMaxDepth || null, body_limit_action: WAF_PROFILE_DEFAULTS[id].limitAction,
    })),
    limit_actions: [...WAF_LIMIT_ACTIONS],
    limit_bounds: { body_limit_kb: [...WAF_LIMIT_BOUNDS.bodyLimitKb], body_max_args: [...WAF_LIMIT_BOUNDS.maxArgs], json_max_depth: [...WAF_LIMIT_BOUNDS.jsonMaxDepth] },
    families: WAF_FAMILIES.map((f) => ({ id: f.id, label: f.label, crs_rule_ids: [...f.crsRuleIds] })),
    default_families: [...WAF_DEFAULT_FAMILIES],
    virtual_patches: WAF_VIRTUAL_PATCHES.map((p) => ({ rule_id: p.id, cve: p.cve, title: p.title })),
    crs_default_content_types: [...CRS_DEFAULT_CONTENT_TYPES],
  }
}
