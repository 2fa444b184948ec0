import type { ProxyModuleName } from '../../core/config'
import type { DnsModuleName } from '../../hosts/dns-catalogue'

// The plain-data snapshot the builder turns into Caddy JSON. The reconciler
// reads it from the database (secrets already decrypted); the builder never does I/O.

export interface HostSnapshot {
  id: number; domain: string; aliases: string[]; target_group_id: number; enabled: boolean
  tls_mode: 'auto' | 'manual' | 'none'; tls_challenge: 'http' | 'tls-alpn' | 'dns'; tls_email: string | null; tls_dns_provider: string | null
  tls_acme_ca_url: string | null; lan_only: boolean; auth_required: boolean; bouncer_enabled: boolean
  waf_enabled: boolean; waf_mode: 'detection' | 'blocking'; rate_limit_enabled: boolean; rate_limit_rps: number; rate_limit_burst: number
  true_detect_mode: boolean
  /** While the security engine is unreachable, answer 503 to everything. */
  engine_down_refuse: boolean
  /** WAF profile and its settings; null = the profile's default (waf-rules.ts). */
  waf_profile: 'fast' | 'full'; waf_families: string[]
  waf_body_limit_kb: number | null; waf_body_max_args: number | null; waf_json_max_depth: number | null
  waf_body_limit_action: 'partial' | 'pass' | 'refuse' | null; waf_allowed_content_types: string[] | null
}

/** A WAF rule turned off for one host: everywhere, under a path, or for one argument. */
export interface WafExclusionSnapshot {
  id: number; host_id: number; rule_id: number; path: string | null; argument: string | null
}

export interface TargetGroupSnapshot {
  id: number; name: string; targets: { address: string; weight: number }[]; scheme: 'http' | 'https'
  lb_policy: 'round_robin' | 'least_conn' | 'random' | 'first' | 'ip_hash' | 'weighted_round_robin'
  health_check: { path: string; interval_seconds: number; expect_status: number } | null; tls_skip_verify: boolean
}

export interface RuleSnapshot {
  id: number; host_id: number; priority: number; path: string; methods: string[]
  action: 'proxy' | 'redirect' | 'respond'; target_group_id: number | null; redirect_url: string | null; redirect_status: number | null
  respond_status: number | null; respond_body: string | null
}

/** An access list as the builder needs it: IP rules (first match wins), then basic-auth users. */
export interface AccessListSnapshot {
  id: number; name: string; realm: string; default_action: 'allow' | 'deny'
  ip_rules: { action: 'allow' | 'deny'; source: string }[]
  /** bcrypt hashes only. */
  users: { username: string; hash: string }[]
  host_ids: number[]
}

export interface ProxySnapshot {
  adminListen: string
  storageRoot: string | null
  logDir: string
  modules: ProxyModuleName[]
  httpListen: string[]; httpsListen: string[]; httpPort: number; httpsPort: number
  panelUpstream: { dial: string; tls: boolean }
  acme: { email: string | null; caUrl: string | null; trustedRootsPemFile: string | null }
  security: { lapiUrl: string; bouncerKey: string | null; tickerInterval: string; appsecUrl: string | null }
  waf: { inboundThreshold: number; outboundThreshold: number }
  /** The operator's whitelist (IPs and CIDRs): the bouncer never judges these sources. */
  whitelist: string[]
  /** Proxies in front of Caddy whose client-address headers are believed (empty: none). */
  clientIp: { trustedProxies: string[]; headers: string[] }
  dnsProviders: Record<string, { module: DnsModuleName; credentials: Record<string, string> }>
  manualCerts: { hostId: number; certFile: string; keyFile: string }[]
  hosts: HostSnapshot[]; targetGroups: TargetGroupSnapshot[]; rules: RuleSnapshot[]
  /**
   * Set by the reconciler just before a push (not read from the database): the
   * sources the engine bans now, refused until `untilMs` while the new bouncer
   * loads its decisions (see buildBouncerWarmupRoute).
   */
  bouncerWarmup?: { untilMs: number; sources: string[] } | null
  /**
   * Set while the security engine is unreachable: the sources it had banned when
   * the panel last read them (the bouncer restarts empty on every push, so they
   * are refused by the configuration itself), and hosts with engine_down_refuse answer 503.
   */
  engineDown?: { knownBanned: string[] } | null
  wafExclusions: WafExclusionSnapshot[]
  /** Added by the access-list snapshot part (hosts/access-lists.ts); absent means none. */
  accessLists?: AccessListSnapshot[]
}

export type Json = Record<string, unknown>
export type Route = Json
