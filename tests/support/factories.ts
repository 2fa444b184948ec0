import type {
  AccessListSnapshot,
  HostSnapshot,
  ProxySnapshot,
  RuleSnapshot,
  TargetGroupSnapshot,
} from '../../server/utils/proxy/build/types'
import { HOST_DEFAULTS, hostBody, resolveHostFields, ruleBody, targetGroupBody } from '../../server/utils/hosts/schemas'
import { hostFromRow, hostToRow, ruleFromRow, ruleToRow, targetGroupFromRow, targetGroupToRow } from '../../server/utils/hosts/records'

// Hosts, groups and rules are made the way the panel makes them: the request
// schema fills the defaults, the create path resolves the rest, and the row is
// read back through the same mapper the snapshot and the presenters use.
const _timestamps = { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' }

export function buildHostSnapshot(overrides: Partial<HostSnapshot> = {}): HostSnapshot {
  const id = overrides.id ?? 1
  const input = hostBody.parse({ domain: `host${id}.example.test`, target_group_id: 1, tls_mode: 'none' })
  const host = hostFromRow({ id, ...hostToRow(resolveHostFields(input, HOST_DEFAULTS)), ..._timestamps })
  return { ...host, ...overrides }
}

export function buildGroupSnapshot(overrides: Partial<TargetGroupSnapshot> = {}): TargetGroupSnapshot {
  const input = targetGroupBody.parse({ name: 'group', targets: [{ address: '10.0.0.5:8080' }] })
  return { ...targetGroupFromRow({ id: 1, ...targetGroupToRow(input), ..._timestamps }), ...overrides }
}

export function buildRuleSnapshot(overrides: Partial<RuleSnapshot> = {}): RuleSnapshot {
  const input = ruleBody.parse({ path: '/api/*', action: 'respond', respond_status: 200, respond_body: 'ok' })
  return { ...ruleFromRow({ id: 1, hostId: 1, ...ruleToRow(input), ..._timestamps }), ...overrides }
}

export function buildSnapshot(overrides: Partial<ProxySnapshot> = {}): ProxySnapshot {
  return {
    adminListen: '127.0.0.1:2019',
    storageRoot: '/var/lib/caddy',
    renewIntervalSeconds: null,
    logDir: '/var/log/panel',
    modules: [],
    httpListen: [':80'],
    httpsListen: [':443'],
    httpPort: 80,
    httpsPort: 443,
    panelUpstream: { dial: '127.0.0.1:3000', tls: false },
    acme: { email: null, caUrl: null, trustedRootsPemFile: null },
    security: { lapiUrl: 'http://127.0.0.1:8080', bouncerKey: null, tickerInterval: '15s', appsecUrl: null },
    waf: { inboundThreshold: 5, outboundThreshold: 4 },
    dnsProviders: {},
    manualCerts: [],
    whitelist: [],
    clientIp: { trustedProxies: [], headers: ['X-Forwarded-For'] },
    hosts: [buildHostSnapshot()],
    targetGroups: [buildGroupSnapshot()],
    rules: [],
    wafExclusions: [],
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
