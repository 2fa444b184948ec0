import { describe, expect, it } from 'vitest'
import { HOST_HANDLER_ORDER, buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { GEO_DENIED_BODY, buildGeoMatcher } from '../../server/utils/proxy/build/geo'
import { LAN_GATE_BODY } from '../../server/utils/proxy/build/lan-gate'
import { ACCESS_DENIED_BODY } from '../../server/utils/proxy/build/access-list'
import { geoPolicySchema } from '../../server/utils/access/schemas'
import { RULE_ID_HEADER } from '../../server/utils/proxy/build/path-rules'
import type { ProxySnapshot } from '../../server/utils/proxy/build/types'
import { buildAccessListSnapshot, buildHostSnapshot, buildRuleSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

// The geo step of the builder (docs/access-control.md, "Enforcement in the proxy"): the matcher's
// configuration, where its route sits in a host's chain and in a path rule, and that a host
// without a policy is built exactly as before.

const FR_ONLY = geoPolicySchema.parse({ rules: [{ action: 'allow', countries: ['fr'] }], default: 'deny' })
const DOMAIN = 'host1.example.test'
const GEO: ProxySnapshot['modules'] = ['geo']

const geoRoutes = (routes: any[]) => routes.filter((r) => r.match?.[0]?.panel_geo_refused)

function build(overrides: Partial<ProxySnapshot> = {}) {
  return buildProxyConfig(buildSnapshot({ modules: GEO, geoipDir: '/srv/geoip', ...overrides }))
}

describe('the host gate', () => {
  it('refuses with 403 on the matcher, with the databases of the snapshot', () => {
    const { config, warnings } = build({ hosts: [buildHostSnapshot({ geo_policy: FR_ONLY })] })
    const [gate, ...others] = geoRoutes(hostSubroutes(config, DOMAIN))
    expect(others).toEqual([])
    expect(gate).toEqual({
      match: [
        {
          panel_geo_refused: {
            country_db: '/srv/geoip/country.mmdb',
            default: 'deny',
            unknown_address: 'allow_lan',
            rules: [{ action: 'allow', countries: ['FR'] }],
          },
        },
      ],
      handle: [{ handler: 'static_response', status_code: 403, body: GEO_DENIED_BODY }],
      terminal: true,
    })
    expect(warnings.filter((w) => w.includes('geo'))).toEqual([])
  })

  it('answers the host refusal page when the host shows pages', () => {
    const { config } = build({ errorPages: true, hosts: [buildHostSnapshot({ geo_policy: FR_ONLY })] })
    const [gate] = geoRoutes(hostSubroutes(config, DOMAIN))
    expect(gate.handle).toEqual([
      { handler: 'vars', panel_refusal: GEO_DENIED_BODY.trim() },
      { handler: 'error', status_code: 403 },
    ])
  })

  it('names the AS database only when a rule lists AS numbers', () => {
    const policy = geoPolicySchema.parse({ rules: [{ action: 'deny', asns: [64500] }], default: 'allow' })
    const m = buildGeoMatcher(policy, { geoipDir: '/srv/geoip/' }, 'host x', [])
    expect(m).toEqual({
      country_db: '/srv/geoip/country.mmdb',
      asn_db: '/srv/geoip/asn.mmdb',
      default: 'allow',
      unknown_address: 'allow_lan',
      rules: [{ action: 'deny', asns: [64500] }],
    })
    expect(buildGeoMatcher(FR_ONLY, { geoipDir: '/srv/geoip' }, 'host x', []).asn_db).toBeUndefined()
  })

  it('fails closed with a warning on a proxy without the geo module', () => {
    const { config, warnings } = build({ modules: ['crowdsec'], hosts: [buildHostSnapshot({ geo_policy: FR_ONLY })] })
    const routes = hostSubroutes(config, DOMAIN)
    expect(routes[0]).toEqual({ handle: [{ handler: 'static_response', status_code: 403, body: GEO_DENIED_BODY }], terminal: true })
    expect(warnings).toContain(`host ${DOMAIN}: the proxy has no geo module (PROXY_MODULES); its geo policy refuses every request`)
  })
})

describe('the rule gate', () => {
  it("runs in the rule's route after its tag and before its answer, only for the requests it matches", () => {
    const strict = geoPolicySchema.parse({ rules: [{ action: 'allow', cidrs: ['10.0.0.0/8'] }], default: 'deny', unknown_address: 'deny' })
    const rule = buildRuleSnapshot({ id: 7, path: '/admin*', geo_policy: strict })
    const { config } = build({ hosts: [buildHostSnapshot({ geo_policy: FR_ONLY })], rules: [rule] })
    const routes = hostSubroutes(config, DOMAIN)
    const ruleRoute = routes.find((r) => r.match?.[0]?.path?.[0] === '/admin*')
    expect(ruleRoute.handle[0]).toEqual({ handler: 'headers', response: { set: { [RULE_ID_HEADER]: ['7'] } } })
    expect(ruleRoute.handle[1]).toEqual({
      handler: 'subroute',
      routes: [
        {
          match: [
            {
              panel_geo_refused: {
                country_db: '/srv/geoip/country.mmdb',
                default: 'deny',
                unknown_address: 'deny',
                rules: [{ action: 'allow', cidrs: ['10.0.0.0/8'] }],
              },
            },
          ],
          handle: [{ handler: 'static_response', status_code: 403, body: GEO_DENIED_BODY }],
          terminal: true,
        },
      ],
    })
    expect(ruleRoute.handle.at(-1)).toMatchObject({ handler: 'static_response', status_code: 200 })
    // The host's gate comes first in the host's chain; the rule's comes after it.
    expect(routes.indexOf(geoRoutes(routes)[0])).toBeLessThan(routes.indexOf(ruleRoute))
  })

  it('leaves a rule without a policy as it was', () => {
    const rule = buildRuleSnapshot({ id: 7 })
    const a = build({ rules: [rule] })
    const b = build({ rules: [{ ...rule, geo_policy: null }], geoipDir: '/elsewhere' })
    expect(stableStringify(a.config)).toBe(stableStringify(b.config))
  })
})

describe('order in the chain', () => {
  it('is a step right after the access list IP rules', () => {
    expect(HOST_HANDLER_ORDER.indexOf('geo')).toBe(HOST_HANDLER_ORDER.indexOf('access_ip') + 1)
  })

  it('sits after the LAN gate and the access list, before compression, the bouncer and the upstream', () => {
    const list = buildAccessListSnapshot({ ip_rules: [{ action: 'deny', source: '198.51.100.7' }] })
    const { config } = build({
      compression: { enabled: true, types: ['text/html'], minimumBytes: 512 },
      accessLists: [list],
      hosts: [buildHostSnapshot({ lan_only: true, compression: 'on', geo_policy: FR_ONLY })],
    })
    const routes = hostSubroutes(config, DOMAIN)
    const kinds = routes.map((r) => {
      const h = r.handle[0]
      if (r.match?.[0]?.panel_geo_refused) return 'geo'
      if (h.body === LAN_GATE_BODY) return 'lan_gate'
      if (h.body === ACCESS_DENIED_BODY) return 'access_ip'
      if (h.handler === 'encode' || r.handle.some((x: any) => x.handler === 'encode')) return 'encode'
      return h.handler
    })
    expect(kinds.slice(0, 4)).toEqual(['lan_gate', 'access_ip', 'geo', 'encode'])
  })
})

describe('unknown address modes', () => {
  it.each(['allow_lan', 'allow', 'deny'] as const)('passes %s to the matcher', (mode) => {
    const policy = geoPolicySchema.parse({ rules: [{ action: 'deny', continents: ['AS'] }], default: 'allow', unknown_address: mode })
    expect(buildGeoMatcher(policy, {}, 'host x', [])).toMatchObject({ unknown_address: mode, default: 'allow' })
  })

  it('defaults to allow_lan, as the policy schema says', () => {
    expect(buildGeoMatcher(geoPolicySchema.parse({ default: 'deny' }), {}, 'host x', [])).toEqual({
      country_db: '/var/lib/panel/geoip/country.mmdb',
      default: 'deny',
      unknown_address: 'allow_lan',
    })
  })
})

describe('access list CIDRs', () => {
  it("adds the list's IP rule sources to the rule's own ranges, and never expands a country", () => {
    const list = buildAccessListSnapshot({
      id: 4,
      host_ids: [],
      ip_rules: [
        { action: 'allow', source: '192.0.2.0/24' },
        { action: 'deny', source: '2001:db8::/32' },
        { action: 'allow', source: '10.1.2.3' },
      ],
    })
    const policy = geoPolicySchema.parse({
      rules: [{ action: 'allow', cidrs: ['10.1.2.3', '172.16.0.0/12'], access_list_id: 4, countries: ['DE'] }],
      default: 'deny',
    })
    const warnings: string[] = []
    expect(buildGeoMatcher(policy, { accessLists: [list] }, 'host x', warnings).rules).toEqual([
      { action: 'allow', countries: ['DE'], cidrs: ['10.1.2.3', '172.16.0.0/12', '192.0.2.0/24', '2001:db8::/32'] },
    ])
    expect(warnings).toEqual([])
  })

  it('warns and matches nothing when the list is gone', () => {
    const policy = geoPolicySchema.parse({ rules: [{ action: 'allow', access_list_id: 9 }], default: 'deny' })
    const warnings: string[] = []
    expect(buildGeoMatcher(policy, { accessLists: [] }, 'host x', warnings).rules).toEqual([{ action: 'allow' }])
    expect(warnings).toEqual(['host x: geo rule 1 names access list 9, which does not exist'])
  })
})

describe('bytes', () => {
  it('are the same for the same snapshot, whatever the order the database gave', () => {
    const hosts = [1, 2, 3].map((id) => buildHostSnapshot({ id, domain: `h${id}.example.test`, geo_policy: id === 2 ? null : FR_ONLY }))
    const rules = [
      buildRuleSnapshot({ id: 1, host_id: 1, path: '/a', geo_policy: FR_ONLY }),
      buildRuleSnapshot({ id: 2, host_id: 3, path: '/b' }),
    ]
    const a = build({ hosts, rules })
    const b = build({ hosts: [...hosts].reverse(), rules: [...rules].reverse() })
    expect(stableStringify(a.config)).toBe(stableStringify(b.config))
  })

  it('of a host without a policy do not change with the geo module or the databases path', () => {
    const hosts = [buildHostSnapshot({ lan_only: true })]
    const before = buildProxyConfig(buildSnapshot({ hosts, rules: [buildRuleSnapshot()] }))
    const after = build({ hosts, rules: [buildRuleSnapshot()] })
    expect(stableStringify(after.config)).toBe(stableStringify(before.config))
    expect(stableStringify(after.config)).not.toContain('panel_geo')
    expect(after.warnings).toEqual(before.warnings)
  })
})
