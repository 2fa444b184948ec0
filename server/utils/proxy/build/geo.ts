import type { GeoPolicy } from '../../access/schemas'
import type { AccessListSnapshot, Json, ProxySnapshot, Route } from './types'

// A host's (or a path rule's) geo and network policy in the proxy (docs/access-control.md,
// "Enforcement in the proxy"): one route whose matcher, http.matchers.panel_geo_refused
// (deploy/proxy/caddy/geoext), looks the client address up in the databases the panel keeps
// and matches when the policy refuses it. Countries are never expanded into address ranges:
// the lookup happens per request in the proxy, and a replaced database is read without a push.

export const GEO_DENIED_BODY = 'Access denied: not allowed from your location or network\n'
/** Where the databases are when the snapshot does not say (hand-built test snapshots). */
export const DEFAULT_GEOIP_DIR = '/var/lib/panel/geoip'

function _listRanges(list: AccessListSnapshot): string[] {
  return list.ip_rules.map((r) => r.source)
}

/**
 * The matcher's configuration. An access list named by a rule becomes that list's IP rules' sources
 * (every rule's, allow and deny alike: the list names the addresses, the geo rule its action).
 * The AS database is named only when a rule lists AS numbers, so a policy without one never reads it.
 */
export function buildGeoMatcher(
  policy: GeoPolicy,
  snapshot: Pick<ProxySnapshot, 'geoipDir' | 'accessLists'>,
  where: string,
  warnings: string[],
): Json {
  const dir = (snapshot.geoipDir ?? DEFAULT_GEOIP_DIR).replace(/\/+$/, '')
  const lists = new Map((snapshot.accessLists ?? []).map((l) => [l.id, l]))
  const rules = policy.rules.map((rule, i) => {
    let cidrs = [...rule.cidrs]
    if (rule.access_list_id !== null) {
      const list = lists.get(rule.access_list_id)
      // The API refuses a missing list and the deletion of a used one; a rule left without its
      // addresses matches nothing rather than everything.
      if (!list) warnings.push(`${where}: geo rule ${i + 1} names access list ${rule.access_list_id}, which does not exist`)
      else cidrs = [...new Set([...cidrs, ..._listRanges(list)])]
    }
    const out: Json = { action: rule.action }
    if (rule.countries.length) out.countries = [...rule.countries]
    if (rule.continents.length) out.continents = [...rule.continents]
    if (rule.asns.length) out.asns = [...rule.asns]
    if (cidrs.length) out.cidrs = cidrs
    return out
  })
  const matcher: Json = { country_db: `${dir}/country.mmdb`, default: policy.default, unknown_address: policy.unknown_address }
  if (policy.rules.some((r) => r.asns.length)) matcher.asn_db = `${dir}/asn.mmdb`
  if (rules.length) matcher.rules = rules
  return matcher
}

/**
 * The gate: 403 with GEO_DENIED_BODY when the policy refuses the client (the caller turns it into
 * the host's refusal page with withPageRefusals). A proxy without the geo module cannot judge the
 * address: the gate then refuses every request (fail closed, with a warning), never lets all in.
 */
export function buildGeoGateRoutes(policy: GeoPolicy, snapshot: ProxySnapshot, where: string, warnings: string[]): Route[] {
  const refuse = [{ handler: 'static_response', status_code: 403, body: GEO_DENIED_BODY }]
  if (!snapshot.modules.includes('geo')) {
    warnings.push(`${where}: the proxy has no geo module (PROXY_MODULES); its geo policy refuses every request`)
    return [{ handle: refuse, terminal: true }]
  }
  return [{ match: [{ panel_geo_refused: buildGeoMatcher(policy, snapshot, where, warnings) }], handle: refuse, terminal: true }]
}
