import { BlockList, isIP } from 'node:net'
import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { ACCESS_DENIED_BODY, buildAccessListIpRoutes, buildBasicAuthHandler } from '../../server/utils/proxy/build/access-list'
import type { AccessListSnapshot } from '../../server/utils/proxy/build/types'
import { buildAccessListSnapshot, buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const NO_PROXIES = { trustedProxies: [], headers: ['X-Forwarded-For'] }
const CDN = { trustedProxies: ['198.51.100.40/32'], headers: ['X-Forwarded-For'] }
const HASH = '$2b$10$DptKLZz3A1Z.3KOz.puniOM7nX.HEUWfO3HBN.cBjxMLt5Oxl05Om'
const DENY = { handler: 'static_response', status_code: 403, body: ACCESS_DENIED_BODY }

function _inRanges(ip: string, ranges: string[]): boolean {
  const list = new BlockList()
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4'
  for (const r of ranges) {
    const [addr, bits] = r.split('/')
    const type = isIP(addr!) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) list.addAddress(addr!, type)
    else list.addSubnet(addr!, Number(bits), type)
  }
  return list.check(ip, family)
}

/** Caddy's reading of the routes for one peer address: the first matching route with a 403 refuses. */
function _refusedByRoutes(routes: any[], ip: string): boolean {
  const matches = (m: any): boolean =>
    Object.entries(m).every(([k, v]: [string, any]) =>
      k === 'remote_ip'
        ? _inRanges(ip, v.ranges)
        : k === 'not'
          ? !v.some(matches)
          : (() => {
              throw new Error(`unexpected matcher ${k}`)
            })(),
    )
  return routes.some((r) => (!r.match || r.match.some(matches)) && r.handle[0].status_code === 403)
}

/** The documented meaning: the first rule whose source matches decides, else the default. */
function _refusedByRules(list: AccessListSnapshot, ip: string): boolean {
  const rule = list.ip_rules.find((r) => _inRanges(ip, [r.source]))
  return (rule?.action ?? list.default_action) === 'deny'
}

describe('buildAccessListIpRoutes — first match wins, then the default', () => {
  it('no rules and an allow default: nothing in the chain', () => {
    expect(buildAccessListIpRoutes(buildAccessListSnapshot(), NO_PROXIES)).toEqual([])
  })

  it('a deny default without rules refuses everything', () => {
    expect(buildAccessListIpRoutes(buildAccessListSnapshot({ default_action: 'deny' }), NO_PROXIES)).toEqual([
      { handle: [DENY], terminal: true },
    ])
  })

  it('an allow above a wider deny punches a hole in it; consecutive denies share one route', () => {
    const list = buildAccessListSnapshot({
      ip_rules: [
        { action: 'allow', source: '198.51.100.16/28' },
        { action: 'deny', source: '198.51.100.0/24' },
        { action: 'deny', source: '2001:db8::/32' },
      ],
    })
    expect(buildAccessListIpRoutes(list, NO_PROXIES)).toEqual([
      {
        match: [{ remote_ip: { ranges: ['198.51.100.0/24', '2001:db8::/32'] }, not: [{ remote_ip: { ranges: ['198.51.100.16/28'] } }] }],
        handle: [DENY],
        terminal: true,
      },
    ])
  })

  it('a deny default refuses every source no allow rule names', () => {
    const list = buildAccessListSnapshot({
      default_action: 'deny',
      ip_rules: [
        { action: 'allow', source: '10.0.0.0/8' },
        { action: 'allow', source: '198.51.100.7' },
      ],
    })
    expect(buildAccessListIpRoutes(list, NO_PROXIES)).toEqual([
      { match: [{ not: [{ remote_ip: { ranges: ['10.0.0.0/8', '198.51.100.7'] } }] }], handle: [DENY], terminal: true },
    ])
  })

  it('with trusted proxies, judges the client address Caddy took from their header (as the LAN gate does)', () => {
    const list = buildAccessListSnapshot({ ip_rules: [{ action: 'deny', source: '198.51.100.0/24' }] })
    expect(buildAccessListIpRoutes(list, CDN)[0].match).toEqual([{ client_ip: { ranges: ['198.51.100.0/24'] } }])
  })

  const cases: Array<{ name: string; list: AccessListSnapshot }> = [
    {
      name: 'allow, deny, allow, deny; default allow',
      list: buildAccessListSnapshot({
        ip_rules: [
          { action: 'allow', source: '198.51.100.8/29' },
          { action: 'deny', source: '198.51.100.0/26' },
          { action: 'allow', source: '198.51.100.64/26' },
          { action: 'deny', source: '198.51.100.0/24' },
        ],
      }),
    },
    {
      name: 'deny then a wider allow; default deny',
      list: buildAccessListSnapshot({
        default_action: 'deny',
        ip_rules: [
          { action: 'deny', source: '198.51.100.10' },
          { action: 'allow', source: '198.51.100.0/24' },
          { action: 'deny', source: '198.51.101.0/24' },
        ],
      }),
    },
    {
      name: 'only denies; default allow',
      list: buildAccessListSnapshot({
        ip_rules: [
          { action: 'deny', source: '198.51.100.128/25' },
          { action: 'deny', source: '198.51.101.1' },
        ],
      }),
    },
  ]
  for (const { name, list } of cases) {
    it(`refuses exactly the sources the rules deny: ${name}`, () => {
      const routes = buildAccessListIpRoutes(list, NO_PROXIES)
      for (const ip of [
        '198.51.100.1',
        '198.51.100.9',
        '198.51.100.10',
        '198.51.100.20',
        '198.51.100.70',
        '198.51.100.130',
        '198.51.100.200',
        '198.51.101.1',
        '198.51.101.2',
        '10.1.2.3',
      ])
        expect({ ip, refused: _refusedByRoutes(routes, ip) }).toEqual({ ip, refused: _refusedByRules(list, ip) })
    })
  }
})

describe('buildBasicAuthHandler — Caddy http_basic', () => {
  it('no users: no handler', () => {
    expect(buildBasicAuthHandler(buildAccessListSnapshot())).toBeNull()
  })

  it('gives each bcrypt hash base64-encoded (read by Caddy 2.6 and 2.11), users sorted, the realm and a hash cache', () => {
    const handler = buildBasicAuthHandler(
      buildAccessListSnapshot({
        realm: 'staff area',
        users: [
          { username: 'zoe', hash: HASH },
          { username: 'ann', hash: HASH },
        ],
      }),
    )
    expect(handler).toEqual({
      handler: 'authentication',
      providers: {
        http_basic: {
          accounts: [
            { username: 'ann', password: Buffer.from(HASH).toString('base64') },
            { username: 'zoe', password: Buffer.from(HASH).toString('base64') },
          ],
          hash: { algorithm: 'bcrypt' },
          realm: 'staff area',
          hash_cache: {},
        },
      },
    })
    expect(Buffer.from((handler as any).providers.http_basic.accounts[0].password, 'base64').toString()).toBe(HASH)
  })
})

describe('access list — in the host chain', () => {
  const list = buildAccessListSnapshot({
    ip_rules: [{ action: 'deny', source: '198.51.100.0/24' }],
    users: [{ username: 'ann', hash: HASH }],
    host_ids: [1, 2],
  })

  it('LAN gate first, then the IP rules, then bouncer -> rate limit -> basic auth -> WAF -> ForwardAuth', () => {
    const host = buildHostSnapshot({ lan_only: true, rate_limit_enabled: true, waf_enabled: true, auth_required: true })
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec', 'waf', 'ratelimit'],
        security: { ...buildSnapshot().security, bouncerKey: 'key' },
        hosts: [host],
        accessLists: [list],
      }),
    )
    const routes = hostSubroutes(config, 'host1.example.test')
    expect(routes[0].handle[0].body).toBe('Access denied: LAN only\n')
    expect(routes[1]).toEqual(buildAccessListIpRoutes(list, NO_PROXIES)[0])
    expect(routes[2].handle.map((h: any) => h.handler)).toEqual([
      'crowdsec',
      'rate_limit',
      'authentication',
      'waf',
      'reverse_proxy',
      'headers',
    ])
  })

  it('applies to every host it is attached to, and to no other', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2 }), buildHostSnapshot({ id: 3 })], accessLists: [list] }),
    )
    for (const domain of ['host1.example.test', 'host2.example.test'])
      expect(JSON.stringify(hostSubroutes(config, domain))).toContain('"authentication"')
    const other = JSON.stringify(hostSubroutes(config, 'host3.example.test'))
    expect(other).not.toContain('authentication')
    expect(other).not.toContain(ACCESS_DENIED_BODY.trim())
  })

  it('a list attached to no host changes nothing in the configuration', () => {
    const without = buildProxyConfig(buildSnapshot()).config
    expect(buildProxyConfig(buildSnapshot({ accessLists: [{ ...list, host_ids: [] }] })).config).toEqual(without)
  })
})
