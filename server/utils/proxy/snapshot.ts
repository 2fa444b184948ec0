import { hosts, rules, targetGroups, wafExclusions, whitelistEntries } from '../../../db/schema'
import { getConfig } from '../core/config'
import type { Executor } from '../core/db'
import { getSetting } from '../core/settings'
import type { HostSnapshot, ProxySnapshot, RuleSnapshot, TargetGroupSnapshot, WafExclusionSnapshot } from './build/types'

// Reads everything the proxy configuration depends on, inside the caller's
// transaction when there is one, so a pending change is pushed before commit.

type _SnapshotPart = (exec: Executor, snapshot: ProxySnapshot) => Promise<void>
const _parts: _SnapshotPart[] = []

/** Later concerns (DNS credentials, manual certificates, WAF thresholds) add their part here. */
export function registerSnapshotPart(part: _SnapshotPart): void {
  _parts.push(part)
}

export function hostRowToSnapshot(h: typeof hosts.$inferSelect): HostSnapshot {
  return {
    id: h.id, domain: h.domain, aliases: h.aliases, target_group_id: h.targetGroupId, enabled: h.enabled,
    tls_mode: h.tlsMode, tls_challenge: h.tlsChallenge, tls_email: h.tlsEmail, tls_dns_provider: h.tlsDnsProvider,
    tls_acme_ca_url: h.tlsAcmeCaUrl, lan_only: h.lanOnly, auth_required: h.authRequired, bouncer_enabled: h.bouncerEnabled,
    waf_enabled: h.wafEnabled, waf_mode: h.wafMode, rate_limit_enabled: h.rateLimitEnabled, rate_limit_rps: h.rateLimitRps,
    rate_limit_burst: h.rateLimitBurst, true_detect_mode: h.trueDetectMode, engine_down_refuse: h.engineDownRefuse,
    waf_profile: h.wafProfile, waf_families: h.wafFamilies, waf_body_limit_kb: h.wafBodyLimitKb, waf_body_max_args: h.wafBodyMaxArgs,
    waf_json_max_depth: h.wafJsonMaxDepth, waf_body_limit_action: h.wafBodyLimitAction, waf_allowed_content_types: h.wafAllowedContentTypes,
  }
}

export function wafExclusionRowToSnapshot(e: typeof wafExclusions.$inferSelect): WafExclusionSnapshot {
  return { id: e.id, host_id: e.hostId, rule_id: e.ruleId, path: e.path, argument: e.argument }
}

export function groupRowToSnapshot(g: typeof targetGroups.$inferSelect): TargetGroupSnapshot {
  return {
    id: g.id, name: g.name, targets: g.targets, scheme: g.scheme, lb_policy: g.lbPolicy,
    health_check: g.healthCheck ?? null, tls_skip_verify: g.tlsSkipVerify,
  }
}

export function ruleRowToSnapshot(r: typeof rules.$inferSelect): RuleSnapshot {
  return {
    id: r.id, host_id: r.hostId, priority: r.priority, path: r.path, methods: r.methods, action: r.action,
    target_group_id: r.targetGroupId, redirect_url: r.redirectUrl, redirect_status: r.redirectStatus,
    respond_status: r.respondStatus, respond_body: r.respondBody,
  }
}

export async function readProxySnapshot(exec: Executor): Promise<ProxySnapshot> {
  const cfg = getConfig()
  const internal = new URL(cfg.internalUrl)
  const [hostRows, groupRows, ruleRows, exclusionRows] = await Promise.all([
    exec.select().from(hosts), exec.select().from(targetGroups), exec.select().from(rules), exec.select().from(wafExclusions),
  ])
  const snapshot: ProxySnapshot = {
    adminListen: new URL(cfg.proxy.adminUrl).host,
    storageRoot: cfg.proxy.dataDir ?? null,
    logDir: cfg.proxy.logDir,
    modules: cfg.proxy.modules,
    httpListen: cfg.proxy.httpListen, httpsListen: cfg.proxy.httpsListen,
    httpPort: cfg.proxy.httpPort, httpsPort: cfg.proxy.httpsPort,
    panelUpstream: { dial: `${internal.hostname.includes(':') ? `[${internal.hostname}]` : internal.hostname}:${internal.port || (internal.protocol === 'https:' ? 443 : 80)}`, tls: internal.protocol === 'https:' },
    acme: {
      email: (await getSetting<string>('acme.email', exec)) || null,
      caUrl: (await getSetting<string>('acme.ca_url', exec)) || null,
      trustedRootsPemFile: cfg.proxy.acmeTrustedRootsPemFile ?? null,
    },
    security: {
      lapiUrl: cfg.lapi.url, bouncerKey: cfg.lapi.bouncerKey ?? null,
      tickerInterval: await getSetting<string>('security_engine.ticker_interval', exec), appsecUrl: cfg.lapi.appsecUrl ?? null,
    },
    waf: { inboundThreshold: await getSetting<number>('appsec.inbound_threshold', exec), outboundThreshold: await getSetting<number>('appsec.outbound_threshold', exec) },
    whitelist: (await exec.select({ value: whitelistEntries.value }).from(whitelistEntries)).map((r) => r.value).sort(),
    clientIp: {
      trustedProxies: await getSetting<string[]>('proxy.trusted_proxies', exec),
      headers: await getSetting<string[]>('proxy.client_ip_headers', exec),
    },
    dnsProviders: {},
    manualCerts: [],
    hosts: hostRows.map(hostRowToSnapshot),
    targetGroups: groupRows.map(groupRowToSnapshot),
    rules: ruleRows.map(ruleRowToSnapshot),
    wafExclusions: exclusionRows.map(wafExclusionRowToSnapshot),
  }
  for (const part of _parts) await part(exec, snapshot)
  return snapshot
}
