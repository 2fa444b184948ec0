import { describe, expect, it } from 'vitest'
import {
  HOST_HANDLER_ORDER,
  assertSafeHostname,
  buildProxyConfig,
  hashProxyConfig,
  stableStringify,
} from '../../server/utils/proxy/build/index'
import { buildUnknownHostRoute } from '../../server/utils/proxy/build/unknown-host'
import { buildForwardAuthProbeRoute } from '../../server/utils/proxy/build/forward-auth'
import type { ProxySnapshot } from '../../server/utils/proxy/build/types'
import { ACCESS_DENIED_BODY } from '../../server/utils/proxy/build/access-list'
import {
  buildAccessListSnapshot,
  buildGroupSnapshot,
  buildHostSnapshot,
  buildRuleSnapshot,
  buildSnapshot,
  hostSubroutes,
} from '../support/factories'

const security = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }
const withAppsec = { ...security, appsecUrl: 'http://crowdsec:7422' }
const everything = buildHostSnapshot({
  lan_only: true,
  waf_enabled: true,
  waf_mode: 'blocking',
  rate_limit_enabled: true,
  auth_required: true,
  compression: 'on',
  security_headers: true,
  header_rules: [{ direction: 'request', action: 'set', name: 'X-Tenant', value: 'blue' }],
})
const rule = buildRuleSnapshot({ id: 7, priority: 1, path: '/x', action: 'respond', respond_status: 204, respond_body: '' })
const accessList = buildAccessListSnapshot({
  ip_rules: [{ action: 'deny', source: '198.51.100.0/24' }],
  users: [{ username: 'ann', hash: '$2b$10$DptKLZz3A1Z.3KOz.puniOM7nX.HEUWfO3HBN.cBjxMLt5Oxl05Om' }],
})

/** Which step of HOST_HANDLER_ORDER a route or handler is. */
function stepOf(route: any, handler?: any): string {
  if (route.match?.[0]?.panel_geo_refused) return 'geo'
  if (route.match?.[0]?.not) return 'lan_gate'
  if (route.handle?.[0]?.body === ACCESS_DENIED_BODY) return 'access_ip'
  if (!handler && route.handle?.[0]?.handler === 'encode') return 'encode'
  if (!handler && route.handle?.[0]?.response?.deferred) return 'response_headers'
  if (!handler) return route.match ? 'rules' : 'upstream'
  if (handler.rewrite?.uri === '/auth/forward') return 'forward_auth'
  // ForwardAuth's second handler: the panel's session cookie leaves the request.
  if (handler.handler === 'headers' && handler.request?.replace?.Cookie) return 'forward_auth'
  if (handler.handler === 'headers' && handler.request?.set?.['X-Tenant']) return 'request_headers'
  // The AppSec threshold header: set just before `crowdsec`, removed just after `appsec`.
  if (handler.handler === 'headers' && handler.request?.set) return 'crowdsec'
  if (handler.handler === 'headers' && handler.request?.delete) return 'appsec'
  if (handler.handler === 'authentication') return 'basic_auth'
  return handler.handler
}
const withoutRepeats = (xs: string[]) => xs.filter((x, i) => x !== xs[i - 1])

describe('buildProxyConfig — handler order', () => {
  it('HOST_HANDLER_ORDER is the one list the chain follows', () => {
    expect([...HOST_HANDLER_ORDER]).toEqual([
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
    ])
  })

  it('a host with every feature runs them in that order', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec', 'waf', 'ratelimit', 'dns', 'geo'],
        security: withAppsec,
        hosts: [{ ...everything, geo_policy: { rules: [], default: 'allow', unknown_address: 'deny' } }],
        rules: [rule],
        accessLists: [accessList],
      }),
    )
    const routes = hostSubroutes(config, 'host1.example.test')
    const seen = [
      stepOf(routes[0]),
      stepOf(routes[1]),
      stepOf(routes[2]),
      stepOf(routes[3]),
      stepOf(routes[4]),
      ...routes[5].handle.map((h: any) => stepOf(routes[5], h)),
      stepOf(routes[6]),
      stepOf(routes[7]),
    ]
    expect(withoutRepeats(seen)).toEqual([...HOST_HANDLER_ORDER])
    expect(routes).toHaveLength(8)
  })

  it('the host route matches all its names, is terminal and holds one subroute', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ aliases: ['www.host1.example.test'] })] })) as any
    const [route] = config.apps.http.servers.http.routes
    expect(route.match).toEqual([{ host: ['host1.example.test', 'www.host1.example.test'] }])
    expect(route.terminal).toBe(true)
    expect(route.handle.map((h: any) => h.handler)).toEqual(['subroute'])
  })
})

describe('buildProxyConfig — determinism', () => {
  function bigSnapshot(order: (xs: any[]) => any[]): ProxySnapshot {
    const hosts = [1, 2, 3, 4, 5].map((id) =>
      buildHostSnapshot({
        id,
        lan_only: id % 2 === 0,
        auth_required: id % 3 === 0,
        tls_mode: (['none', 'auto', 'manual'] as const)[id % 3],
        tls_challenge: id === 4 ? 'dns' : 'http',
        tls_dns_provider: id === 4 ? 'provider_b' : null,
        target_group_id: 1 + (id % 2),
        enabled: id !== 5,
        waf_enabled: true,
        rate_limit_enabled: id > 2,
      }),
    )
    const groups = [
      buildGroupSnapshot({ id: 1 }),
      buildGroupSnapshot({
        id: 2,
        name: 'b',
        lb_policy: 'weighted_round_robin',
        targets: [
          { address: 'b1:80', weight: 2 },
          { address: 'b2:80', weight: 1 },
        ],
      }),
    ]
    const rules = [
      buildRuleSnapshot({ id: 1, host_id: 2, priority: 5 }),
      buildRuleSnapshot({ id: 2, host_id: 2, priority: 5, path: '/b' }),
      buildRuleSnapshot({ id: 3, host_id: 3, action: 'proxy', target_group_id: 1 }),
    ]
    const manualCerts = [
      { hostId: 2, certificatePem: 'CERT 2', keyPem: 'KEY 2' },
      { hostId: 5, certificatePem: 'CERT 5', keyPem: 'KEY 5' },
    ]
    const providers: ProxySnapshot['dnsProviders'] = {}
    for (const [k, v] of order([
      ['provider_a', { module: 'cloudflare', credentials: { api_token: 't' } }],
      ['provider_b', { module: 'route53', credentials: { secret_access_key: 's', access_key_id: 'a' } }],
    ]))
      providers[k] = v
    return buildSnapshot({
      modules: ['crowdsec', 'waf', 'ratelimit', 'dns'],
      security,
      hosts: order(hosts),
      targetGroups: order(groups),
      rules: order(rules),
      manualCerts: order(manualCerts),
      dnsProviders: providers,
    })
  }

  /** A seeded shuffle, so a failure is reproducible. */
  function shuffler(seed: number) {
    return (xs: any[]) => {
      const out = [...xs]
      for (let i = out.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31
        const j = seed % (i + 1)
        ;[out[i], out[j]] = [out[j], out[i]]
      }
      return out
    }
  }

  it('shuffled input gives the same bytes, hash and warnings', () => {
    const reference = buildProxyConfig(bigSnapshot((xs) => xs))
    for (const seed of [1, 2, 3, 42, 1234]) {
      const shuffled = buildProxyConfig(bigSnapshot(shuffler(seed)))
      expect(stableStringify(shuffled.config)).toBe(stableStringify(reference.config))
      expect(hashProxyConfig(shuffled.config)).toBe(hashProxyConfig(reference.config))
      expect(shuffled.warnings).toEqual(reference.warnings)
    }
  })

  it('does not change its input', () => {
    const snapshot = bigSnapshot(shuffler(7))
    const before = JSON.stringify(snapshot)
    buildProxyConfig(snapshot)
    expect(JSON.stringify(snapshot)).toBe(before)
  })

  it('stableStringify sorts keys at every level and keeps array order; the hash is sha256 hex of it', () => {
    expect(stableStringify({ b: 1, a: { d: [2, 1], c: 2 } })).toBe('{"a":{"c":2,"d":[2,1]},"b":1}')
    expect(hashProxyConfig({ a: 1 })).toBe('015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862')
  })
})

describe('buildProxyConfig — modules the proxy lacks', () => {
  it('PROXY_MODULES=none: no crowdsec, waf, rate_limit or dns anywhere, and a warning for each wish', () => {
    const r = buildProxyConfig(
      buildSnapshot({
        modules: [],
        security,
        hosts: [everything, buildHostSnapshot({ id: 2, tls_mode: 'auto', tls_challenge: 'dns', tls_dns_provider: 'provider_a' })],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 't' } } },
      }),
    )
    const text = JSON.stringify(r.config)
    for (const absent of ['crowdsec', '"waf"', 'rate_limit', 'cloudflare', '"dns"']) expect(text).not.toContain(absent)
    const all = r.warnings.join('\n')
    for (const wanted of [/no crowdsec module/, /no waf module/, /no ratelimit module/, /PROXY_MODULES lacks dns/])
      expect(all).toMatch(wanted)
  })

  it('each module present brings only its own part', () => {
    const r = buildProxyConfig(buildSnapshot({ modules: ['waf'], security, hosts: [everything] }))
    // After the LAN gate, compression and the response headers: the chain.
    const handlers = hostSubroutes(r.config, 'host1.example.test')[3].handle.map((h: any) => h.handler)
    expect(handlers).toEqual(['waf', 'reverse_proxy', 'headers', 'headers'])
    expect((r.config as any).apps.crowdsec).toBeUndefined()
  })
})

describe('buildProxyConfig — the document', () => {
  it('always carries the admin listener with persistence off, storage when set, and the http ports', () => {
    const { config } = buildProxyConfig(buildSnapshot({ adminListen: '0.0.0.0:2019', httpPort: 8080, httpsPort: 8443 })) as any
    expect(config.admin).toEqual({ listen: '0.0.0.0:2019', config: { persist: false } })
    expect(config.storage).toEqual({ module: 'file_system', root: '/var/lib/caddy' })
    expect(config.apps.http.http_port).toBe(8080)
    expect(config.apps.http.https_port).toBe(8443)
    expect((buildProxyConfig(buildSnapshot({ storageRoot: null })).config as any).storage).toBeUndefined()
  })

  it('two servers on their listen addresses: plain hosts on http, TLS hosts on https', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        httpListen: [':80', '[::]:80'],
        httpsListen: [':443'],
        hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2, tls_mode: 'auto' })],
      }),
    ) as any
    expect(config.apps.http.servers.http.listen).toEqual([':80', '[::]:80'])
    expect(config.apps.http.servers.https.listen).toEqual([':443'])
    expect(config.apps.http.servers.https.automatic_https).toBeUndefined() // redirects stay on
  })

  it('zero hosts: a valid document with the plain server, the ForwardAuth probe and the unknown-host route, no https server, no tls app', () => {
    const snapshot = buildSnapshot({ hosts: [] })
    const { config, warnings } = buildProxyConfig(snapshot) as any
    expect(Object.keys(config.apps)).toEqual(['http'])
    expect(Object.keys(config.apps.http.servers)).toEqual(['http'])
    expect(config.apps.http.servers.http.routes).toEqual([
      buildForwardAuthProbeRoute(snapshot.panelUpstream),
      buildUnknownHostRoute('http'),
    ])
    expect(warnings).toEqual([])
  })

  it("a Host that no enabled host names: 404 on the plain server, 421 on the TLS one, each server's last route, without a host matcher", () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        hosts: [
          buildHostSnapshot(),
          buildHostSnapshot({ id: 2, domain: 'tls.example.test', tls_mode: 'auto' }),
          buildHostSnapshot({ id: 3, domain: 'off.example.test', enabled: false }),
        ],
      }),
    ) as any
    for (const [server, status] of [
      ['http', 404],
      ['https', 421],
    ] as const) {
      const routes = config.apps.http.servers[server].routes
      const last = routes.at(-1)
      expect(last).toMatchObject({
        '@id': `panel_unknown_host_${server}`,
        terminal: true,
        handle: [
          {
            handler: 'static_response',
            status_code: status,
            headers: { 'Content-Type': ['text/plain; charset=utf-8'] },
            body: 'No site is configured for this host name.\n',
          },
        ],
      })
      // The plain server leaves the TLS host's names to Caddy's HTTP->HTTPS redirect; the TLS server refuses any other name.
      expect(last.match).toEqual(server === 'http' ? [{ not: [{ host: ['tls.example.test'] }] }] : undefined)
      // Every other route names its hosts, so Caddy puts its HTTP->HTTPS redirects before this one.
      expect(routes.slice(0, -1).every((r: any) => r.match?.[0]?.host?.length)).toBe(true)
      expect(routes.filter((r: any) => r['@id']?.startsWith('panel_unknown_host'))).toHaveLength(1)
    }
    // A disabled host is unknown to the proxy: it falls to the refusal too.
    expect(JSON.stringify(config)).not.toContain('off.example.test')
  })

  it('disabled hosts emit nothing at all: no route, no policy, no certificate, no logger name', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        hosts: [
          buildHostSnapshot({ enabled: false, tls_mode: 'auto' }),
          buildHostSnapshot({ id: 2, enabled: false, tls_mode: 'manual', domain: 'm.example.test' }),
        ],
        manualCerts: [{ hostId: 2, certificatePem: 'CERT', keyPem: 'KEY' }],
        rules: [buildRuleSnapshot()],
      }),
    ) as any
    const text = JSON.stringify(config)
    expect(text).not.toContain('host1.example.test')
    expect(text).not.toContain('m.example.test')
    expect(config.apps.tls).toBeUndefined()
    expect(config.apps.http.servers.https).toBeUndefined()
  })
})

describe('assertSafeHostname — injection guard', () => {
  it('refuses quotes, braces, backslashes, whitespace, control characters and the empty name', () => {
    for (const bad of ['a"b.test', "a'b.test", 'a{b}.test', 'a\\b.test', 'a b.test', 'a\tb.test', 'a\nb.test', 'a\u0000b.test', ''])
      expect(() => assertSafeHostname(bad)).toThrow(/unsafe host name/)
    for (const good of ['host.example.test', '*.example.test', 'xn--bcher-kva.example', 'a-b.c'])
      expect(() => assertSafeHostname(good)).not.toThrow()
  })

  it('the builder throws on an unsafe domain or alias, even for a host it would skip', () => {
    expect(() => buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ domain: 'x"}.test' })] }))).toThrow(/unsafe/)
    expect(() => buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ aliases: ['ok.test', 'bad\n.test'] })] }))).toThrow(/unsafe/)
    expect(() => buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ target_group_id: 99, aliases: ['{env.X}'] })] }))).toThrow(
      /unsafe/,
    )
  })
})
