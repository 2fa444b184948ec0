import { createHash } from 'node:crypto'
import { buildAccessListIpRoutes, buildBasicAuthHandler, mapAccessListsByHost } from './access-list'
import {
  buildAppsecHandlers,
  buildAppsecThresholdHeader,
  buildBouncerWarmupRoute,
  buildCrowdsecApp,
  buildEngineDownRefusalRoute,
  buildKnownBansRoute,
  buildCrowdsecHandler,
  buildCrowdsecWarnings,
  hostUsesAppsec,
  hostUsesBouncer,
  stripBouncerWarmup,
} from './crowdsec'
import { PANEL_COOKIE_NAMES } from '../../auth/session-cookie'
import { buildRequestHeaders, buildWrappingRoutes } from './headers'
import {
  buildForwardAuthCallbackRoute,
  buildForwardAuthHandler,
  buildForwardAuthHeaderStripHandler,
  buildForwardAuthProbeRoute,
  buildPanelCookieStripHandler,
  receivesPanelCookie,
} from './forward-auth'
import { buildGeoGateRoutes } from './geo'
import { buildClientAddressMatcher, buildLanGateRoute, buildTrustedProxiesServerOptions } from './lan-gate'
import { buildLogging, buildServerLogs } from './logging'
import { buildDefaultRoute, buildRuleRoute, sortRules } from './path-rules'
import { buildRateLimitHandler } from './rate-limit'
import { buildAcmePolicies, buildCertificateMaintenance } from './tls-acme'
import { buildManualCertificates } from './tls-manual'
import { buildWafHandler, wafBodyMaxArgsWarning } from './waf'
import { buildUnknownHostRoute } from './unknown-host'
import { customHandlersAt } from './custom-handlers'
import { buildKindTerminalRoutes } from './host-kind'
import { buildStreamsApp } from './streams'
import { buildSniListenerWrappers, buildSniServers, hasSniStreams, withSniServers } from './stream-sni'
import { streamsUseBouncer } from './stream-guards'
import { bouncerErrorOption, buildServerErrorPages, hostPageSite, withPageRefusals } from './error-pages'
import { buildStorage } from '../storage/storage-config'
import type { AccessListSnapshot, HostSnapshot, Json, ProxySnapshot, Route, RuleSnapshot, TargetGroupSnapshot } from './types'

/**
 * The order of a host's request chain, read top to bottom: static gates on the
 * client address (cheapest: the LAN gate, then the access list's IP rules, then the geo and
 * network policy, one database lookup, docs/access-control.md) ->
 * compression -> response header rules (both wrap everything after them,
 * docs/hosts.md) -> ban check (403 before any WAF work) -> rate limit -> the access list's basic
 * auth (after the rate limit, which bounds password guessing and the bcrypt work
 * it costs; before the WAF, so an anonymous client never costs a WAF run) ->
 * WAF -> auth sub-request -> request header rules and the upstream Host -> path rules -> the host's upstream (A10,
 * docs/access-lists.md).
 */
export const HOST_HANDLER_ORDER = [
  'lan_gate',
  'access_ip',
  'geo',
  'encode',
  'response_headers',
  'crowdsec',
  'appsec',
  'rate_limit',
  'basic_auth',
  'waf',
  'forward_auth',
  'request_headers',
  'rules',
  'upstream',
] as const

const _UNSAFE_NAME = /["'{}\\\s\u0000-\u001f\u007f]/

/** Last line of defence: names are validated at the API, but nothing unsafe may reach the JSON. */
export function assertSafeHostname(name: string): void {
  if (!name || _UNSAFE_NAME.test(name))
    throw new Error(`unsafe host name refused by the proxy configuration builder: ${JSON.stringify(name)}`)
}

/** JSON with object keys sorted at every level, so equal configurations are equal bytes. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const sorted: Record<string, unknown> = {}
      for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k]
      return sorted
    }
    return v
  })
}

/**
 * Identifies what the database says: the warm-up routes (they carry a time) are left out.
 * `canonicalText` maps a node's own text back to the shared one (rollout.ts: a node's log folder).
 */
export function hashProxyConfig(config: unknown, canonicalText?: (text: string) => string): string {
  const text = stableStringify(stripBouncerWarmup(config))
  return hashOfConfigText(canonicalText ? canonicalText(text) : text)
}

/** hashProxyConfig of a configuration without warm-up routes, from its stableStringify text (no second serialisation). */
export function hashOfConfigText(stableText: string): string {
  return createHash('sha256').update(stableText).digest('hex')
}

/** While the engine is unreachable: fail closed (503), or keep refusing the bans last known. */
function _engineDownRoutes(host: HostSnapshot, snapshot: ProxySnapshot): Route[] {
  if (snapshot.engineDown && host.engine_down_refuse) return [buildEngineDownRefusalRoute()]
  if (snapshot.engineDown?.knownBanned.length && hostUsesBouncer(snapshot, host))
    return [
      buildKnownBansRoute(snapshot.engineDown.knownBanned, snapshot.whitelist, (ranges) =>
        buildClientAddressMatcher(ranges, snapshot.clientIp),
      ),
    ]
  return []
}

/** The ForwardAuth step of a host's chain: the check (and strict mode's code exchange), or the panel cookie's removal. */
function _pushForwardAuthSteps(host: HostSnapshot, snapshot: ProxySnapshot, names: string[], chain: Json[], routes: Route[]): void {
  // Strict session mode: the code exchange goes to the panel after the gates, before the check.
  if (host.auth_required && snapshot.strictSessions) {
    if (chain.length) routes.push({ handle: chain.splice(0) })
    routes.push(buildForwardAuthCallbackRoute(snapshot.panelUpstream))
  }
  if (host.auth_required) chain.push(buildForwardAuthHandler(snapshot.panelUpstream), buildPanelCookieStripHandler(PANEL_COOKIE_NAMES))
  else {
    // Without ForwardAuth no check replaces a client's X-Auth-* headers: they are taken out here, so
    // no upstream ever reads a visitor's own X-Auth-User (a ForwardAuth host deletes them on its 2xx).
    // A host that answers by itself (redirect, static, maintenance without bypass) has no upstream.
    if (host.kind === 'proxy' || (host.kind === 'maintenance' && host.maintenance_bypass.length))
      chain.push(buildForwardAuthHeaderStripHandler())
    // Without ForwardAuth the cookie still reaches a host under its domain: taken out the same way.
    if (snapshot.panelCookie && receivesPanelCookie(names, snapshot.panelCookie))
      chain.push(buildPanelCookieStripHandler(PANEL_COOKIE_NAMES))
  }
}

/** The static gates on the client address, in HOST_HANDLER_ORDER's order; [] for a gate the host does not use. */
function _gateRoutes(
  step: 'lan_gate' | 'access_ip' | 'geo',
  host: HostSnapshot,
  snapshot: ProxySnapshot,
  accessList: AccessListSnapshot | undefined,
  warnings: string[],
): Route[] {
  if (step === 'lan_gate') return host.lan_only ? [buildLanGateRoute(snapshot.clientIp)] : []
  if (step === 'access_ip') return accessList ? buildAccessListIpRoutes(accessList, snapshot.clientIp) : []
  return host.geo_policy ? buildGeoGateRoutes(host.geo_policy, snapshot, `host ${host.domain}`, warnings) : []
}

/**
 * A path rule's geo policy: its gate runs first among the rule's own handlers, after the rule's tag
 * (so a refusal's log row carries the rule id) and after everything of the host's, so a path can be
 * stricter than its host, never looser.
 */
function _withRuleGeoGate(route: Route, rule: RuleSnapshot, host: HostSnapshot, snapshot: ProxySnapshot, warnings: string[]): Route {
  if (!rule.geo_policy) return route
  const gate = withPageRefusals(
    buildGeoGateRoutes(rule.geo_policy, snapshot, `rule ${rule.id} of host ${host.domain}`, warnings),
    host,
    snapshot,
  )
  const [tag, ...rest] = route.handle as Json[]
  return { ...route, handle: [tag, { handler: 'subroute', routes: gate }, ...rest] }
}

function _buildHostRoute(
  host: HostSnapshot,
  snapshot: ProxySnapshot,
  groups: Map<number, TargetGroupSnapshot>,
  rules: RuleSnapshot[],
  accessList: AccessListSnapshot | undefined,
  warnings: string[],
): Route | null {
  const names = [host.domain, ...host.aliases]
  names.forEach(assertSafeHostname)
  const group = host.target_group_id === null ? undefined : groups.get(host.target_group_id)
  // Only a proxy host cannot answer without its group (a maintenance host's bypass is skipped instead).
  if (!group && host.kind === 'proxy') {
    warnings.push(`host ${host.domain}: target group ${host.target_group_id} is missing; host skipped`)
    return null
  }

  // First, so every error of this host (a gate's refusal included) finds its page's site name.
  const routes: Route[] = [...hostPageSite(host, snapshot)]
  const chain: Json[] = []
  const bouncer: Json[] = []
  for (const step of HOST_HANDLER_ORDER) {
    switch (step) {
      case 'lan_gate':
      case 'access_ip':
      case 'geo':
        routes.push(...withPageRefusals(_gateRoutes(step, host, snapshot, accessList, warnings), host, snapshot))
        break
      case 'encode':
      case 'response_headers':
        routes.push(...buildWrappingRoutes(step, host, snapshot, warnings))
        break
      case 'crowdsec':
        routes.push(...withPageRefusals(_engineDownRoutes(host, snapshot), host, snapshot))
        // A host that wants it and cannot have it is reported once for all hosts (buildCrowdsecWarnings).
        // The AppSec threshold header goes first, so that `appsec` follows `crowdsec` directly.
        if (hostUsesAppsec(snapshot, host)) bouncer.push(buildAppsecThresholdHeader(snapshot.waf.inboundThreshold))
        if (hostUsesBouncer(snapshot, host)) bouncer.push(buildCrowdsecHandler())
        break
      case 'appsec':
        // After the ban check (a banned source never reaches AppSec), before the rate limit and the WAF.
        if (hostUsesAppsec(snapshot, host)) bouncer.push(...buildAppsecHandlers())
        // Whitelisted sources skip the bouncer (and AppSec) whatever decisions exist: a route of its own.
        if (bouncer.length && snapshot.whitelist.length)
          routes.push({ match: [{ not: [buildClientAddressMatcher(snapshot.whitelist, snapshot.clientIp)] }], handle: bouncer.splice(0) })
        else chain.push(...bouncer.splice(0))
        break
      case 'rate_limit':
        if (host.rate_limit_enabled) {
          if (snapshot.modules.includes('ratelimit')) chain.push(buildRateLimitHandler(host))
          else warnings.push(`host ${host.domain}: the proxy has no ratelimit module; rate limit not applied`)
        }
        break
      case 'basic_auth': {
        const basicAuth = accessList && buildBasicAuthHandler(accessList)
        if (basicAuth) chain.push(basicAuth)
        break
      }
      case 'waf':
        if (host.waf_enabled) {
          if (snapshot.modules.includes('waf')) {
            chain.push(buildWafHandler(host, snapshot, snapshot.wafExclusions))
            const uninspected = wafBodyMaxArgsWarning(host)
            if (uninspected) warnings.push(uninspected)
          } else warnings.push(`host ${host.domain}: the proxy has no waf module; WAF not applied`)
        }
        break
      case 'forward_auth':
        _pushForwardAuthSteps(host, snapshot, names, chain, routes)
        break
      case 'request_headers':
        chain.push(...buildRequestHeaders(host))
        break
      case 'rules':
        chain.push(...customHandlersAt(host, 'after_security', warnings))
        // The chain so far runs for every request; rules and the default route follow it.
        if (chain.length) routes.push({ handle: chain.splice(0) })
        // Path rules choose among upstreams: a host of another kind answers every path the same way.
        if (host.kind !== 'proxy' && rules.length)
          warnings.push(`host ${host.domain}: a ${host.kind} host does not use its ${rules.length} path rule(s)`)
        else
          for (const rule of sortRules(rules)) {
            const route = buildRuleRoute(rule, host, groups, warnings, rules)
            if (route) routes.push(_withRuleGeoGate(route, rule, host, snapshot, warnings))
          }
        break
      case 'upstream': {
        const custom = customHandlersAt(host, 'before_proxy', warnings)
        if (custom.length) routes.push({ handle: custom })
        // The kind's own answer takes the upstream's place at the end of the chain.
        if (host.kind === 'proxy') routes.push(buildDefaultRoute(group!, warnings))
        else routes.push(...buildKindTerminalRoutes(host, group, snapshot.clientIp, warnings))
        break
      }
    }
  }
  return { match: [{ host: names }], handle: [{ handler: 'subroute', routes }], terminal: true }
}

/**
 * `apps.crowdsec` when a built host or an enabled stream uses the bouncer (the layer-4
 * matcher reads the same app), else null. AppSec fails closed only when every host
 * asking it does; streams have no AppSec.
 */
function _buildCrowdsecAppFor(builtHosts: HostSnapshot[], snapshot: ProxySnapshot): Json | null {
  if (!builtHosts.some((h) => hostUsesBouncer(snapshot, h)) && !streamsUseBouncer(snapshot)) return null
  const appsecHosts = builtHosts.filter((h) => hostUsesAppsec(snapshot, h))
  return {
    ...buildCrowdsecApp(snapshot.security, !appsecHosts.length || !appsecHosts.every((h) => h.engine_down_refuse)),
    ...bouncerErrorOption(builtHosts, snapshot),
  }
}

/** The `tls` app: ACME policies, certificate maintenance and the manual hosts' certificates ({} when none applies). */
function _buildTlsApp(snapshot: ProxySnapshot, tlsHosts: HostSnapshot[], loadPem: Json[], warnings: string[]): Json {
  const policies = buildAcmePolicies(snapshot, tlsHosts, warnings)
  const tls: Json = {}
  const automation = buildCertificateMaintenance(snapshot)
  if (policies.length) automation.policies = policies
  if (Object.keys(automation).length) tls.automation = automation
  if (loadPem.length) tls.certificates = { load_pem: loadPem }
  return tls
}

/** Pure and deterministic: snapshot -> the full Caddy configuration plus warnings for the operator. */
export function buildProxyConfig(snapshot: ProxySnapshot): { config: Json; warnings: string[] } {
  const warnings: string[] = []
  // Disabled hosts emit nothing; everything is sorted so equal snapshots give equal bytes.
  const hosts = [...snapshot.hosts].filter((h) => h.enabled).sort((a, b) => a.id - b.id)
  const groups = new Map([...snapshot.targetGroups].sort((a, b) => a.id - b.id).map((g) => [g.id, g]))
  const rulesByHost = new Map<number, RuleSnapshot[]>()
  for (const r of snapshot.rules) rulesByHost.set(r.host_id, [...(rulesByHost.get(r.host_id) ?? []), r])
  const accessListByHost = mapAccessListsByHost(snapshot.accessLists)

  const plainRoutes: Route[] = []
  const tlsRoutes: Route[] = []
  const builtHosts: HostSnapshot[] = []
  const tlsHosts: HostSnapshot[] = []
  for (const host of hosts) {
    const route = _buildHostRoute(host, snapshot, groups, rulesByHost.get(host.id) ?? [], accessListByHost.get(host.id), warnings)
    if (!route) continue
    builtHosts.push(host)
    if (host.tls_mode === 'none') plainRoutes.push(route)
    else {
      tlsRoutes.push(route)
      tlsHosts.push(host)
    }
  }
  warnings.push(...buildCrowdsecWarnings(snapshot, builtHosts))

  // The plain server always exists, even with no routes (accepted by 2.6.2): it
  // answers ACME http-01 and carries the automatic HTTP->HTTPS redirects of TLS
  // hosts, which Caddy appends to the server listening on http_port.
  // While a new bouncer loads its decisions, the sources banned at push time are refused first.
  const warmup = snapshot.bouncerWarmup
  if (warmup?.sources.length) {
    for (const [server, routes, mode] of [
      ['http', plainRoutes, 'none'],
      ['https', tlsRoutes, 'tls'],
    ] as const) {
      const names = builtHosts
        .filter((h) => hostUsesBouncer(snapshot, h) && (h.tls_mode === 'none') === (mode === 'none'))
        .flatMap((h) => [h.domain, ...h.aliases])
      if (names.length) routes.unshift(buildBouncerWarmupRoute(server, names, warmup, snapshot.whitelist))
    }
  }
  // The panel's ForwardAuth reachability probe, then, last on each server, a Host that
  // no enabled host names gets a clear refusal, logged with its status.
  plainRoutes.push(buildForwardAuthProbeRoute(snapshot.panelUpstream))
  plainRoutes.push(
    buildUnknownHostRoute(
      'http',
      tlsHosts.flatMap((h) => [h.domain, ...h.aliases]),
      snapshot.unknownHostAnswer,
    ),
  )
  tlsRoutes.push(buildUnknownHostRoute('https', [], snapshot.unknownHostAnswer))
  const servers: Json = {
    http: {
      listen: snapshot.httpListen,
      routes: plainRoutes,
      logs: buildServerLogs(builtHosts),
      ...buildTrustedProxiesServerOptions(snapshot.clientIp),
      ...buildServerErrorPages('http', builtHosts, snapshot),
    },
  }
  const manual = buildManualCertificates(snapshot, tlsHosts, warnings)
  // No TLS host, no https server: an empty one would hold the HTTPS port open for nothing.
  if (tlsHosts.length) {
    servers.https = {
      listen: snapshot.httpsListen,
      routes: tlsRoutes,
      logs: buildServerLogs(builtHosts),
      ...buildTrustedProxiesServerOptions(snapshot.clientIp),
      ...buildServerErrorPages('https', builtHosts, snapshot),
      ...buildSniListenerWrappers(snapshot, tlsHosts, warnings),
      // Redirects stay on; only certificate management is skipped for manual hosts.
      ...(manual.skipNames.length ? { automatic_https: { skip_certificates: manual.skipNames } } : {}),
    }
  }
  const apps: Json = { http: { http_port: snapshot.httpPort, https_port: snapshot.httpsPort, servers } }

  const tls = _buildTlsApp(snapshot, tlsHosts, manual.loadPem, warnings)
  if (Object.keys(tls).length) apps.tls = tls
  const layer4 = withSniServers(buildStreamsApp(snapshot, warnings), buildSniServers(snapshot, 'https' in servers, warnings))
  if (layer4) apps.layer4 = layer4
  const crowdsec = _buildCrowdsecAppFor(builtHosts, snapshot)
  if (crowdsec) apps.crowdsec = crowdsec

  const config: Json = {
    admin: { listen: snapshot.adminListen, config: { persist: false } },
    logging: buildLogging(snapshot.logDir, Boolean(layer4) || hasSniStreams(snapshot)),
    apps,
  }
  const storage = buildStorage(snapshot.storage, snapshot.storageRoot, snapshot.modules, warnings)
  if (storage) config.storage = storage
  return { config, warnings: [...new Set(warnings)] }
}
