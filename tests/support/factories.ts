import type { AccessListSnapshot, HostSnapshot, ProxySnapshot, RuleSnapshot, TargetGroupSnapshot } from '../../server/utils/proxy/build/types'

export function buildHostSnapshot(overrides: Partial<HostSnapshot> = {}): HostSnapshot {
  const id = overrides.id ?? 1
  return {
    id, domain: `host${id}.example.test`, aliases: [], target_group_id: 1, enabled: true,
    tls_mode: 'none', tls_challenge: 'http', tls_email: null, tls_dns_provider: null, tls_acme_ca_url: null,
    lan_only: false, auth_required: false, bouncer_enabled: true, waf_enabled: false, waf_mode: 'detection',
    rate_limit_enabled: false, rate_limit_rps: 50, rate_limit_burst: 100, true_detect_mode: false, engine_down_refuse: false,
    waf_profile: 'full', waf_families: ['sqli', 'xss'], waf_body_limit_kb: null, waf_body_max_args: null, waf_json_max_depth: null,
    waf_body_limit_action: null, waf_allowed_content_types: null,
    ...overrides,
  }
}

export function buildGroupSnapshot(overrides: Partial<TargetGroupSnapshot> = {}): TargetGroupSnapshot {
  return {
    id: 1, name: 'group', targets: [{ address: '10.0.0.5:8080', weight: 1 }], scheme: 'http', lb_policy: 'round_robin',
    health_check: null, tls_skip_verify: false, ...overrides,
  }
}

export function buildRuleSnapshot(overrides: Partial<RuleSnapshot> = {}): RuleSnapshot {
  return {
    id: 1, host_id: 1, priority: 100, path: '/api/*', methods: [], action: 'respond', target_group_id: null,
    redirect_url: null, redirect_status: null, respond_status: 200, respond_body: 'ok', ...overrides,
  }
}

export function buildSnapshot(overrides: Partial<ProxySnapshot> = {}): ProxySnapshot {
  return {
    adminListen: '127.0.0.1:2019', storageRoot: '/var/lib/caddy', logDir: '/var/log/panel', modules: [],
    httpListen: [':80'], httpsListen: [':443'], httpPort: 80, httpsPort: 443,
    panelUpstream: { dial: '127.0.0.1:3000', tls: false },
    acme: { email: null, caUrl: null, trustedRootsPemFile: null },
    security: { lapiUrl: 'http://127.0.0.1:8080', bouncerKey: null, tickerInterval: '15s', appsecUrl: null },
    waf: { inboundThreshold: 5, outboundThreshold: 4 }, dnsProviders: {}, manualCerts: [],
    whitelist: [], clientIp: { trustedProxies: [], headers: ['X-Forwarded-For'] },
    hosts: [buildHostSnapshot()], targetGroups: [buildGroupSnapshot()], rules: [], wafExclusions: [],
    ...overrides,
  }
}

/** The subroute handlers of one host in a built config, for assertions. */
export function hostSubroutes(config: any, domain: string): any[] {
  for (const server of Object.values(config.apps.http.servers) as any[]) {
    for (const route of server.routes) if (route.match?.[0]?.host?.includes(domain)) return route.handle[0].routes
  }
  throw new Error(`no route for ${domain}`)
}

export function buildAccessListSnapshot(overrides: Partial<AccessListSnapshot> = {}): AccessListSnapshot {
  return { id: 1, name: 'staff', realm: 'restricted', default_action: 'allow', ip_rules: [], users: [], host_ids: [1], ...overrides }
}
