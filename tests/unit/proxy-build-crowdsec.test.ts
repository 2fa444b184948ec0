import { describe, expect, it } from 'vitest'
import { buildForwardAuthHeaderStripHandler } from '../../server/utils/proxy/build/forward-auth'
import { buildProxyConfig, hashOfConfigText, hashProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import {
  APPSEC_THRESHOLD_HEADER,
  buildBouncerWarmupRoute,
  buildCrowdsecApp,
  buildCrowdsecHandler,
  stripBouncerWarmup,
} from '../../server/utils/proxy/build/crowdsec'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const withKey = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }

describe('buildCrowdsecApp — apps.crowdsec', () => {
  it('streams decisions from the local API, with the trailing slash on api_url', () => {
    expect(buildCrowdsecApp(withKey)).toEqual({
      api_url: 'http://crowdsec:8080/',
      api_key: 'bouncer-key',
      ticker_interval: '15s',
      enable_streaming: true,
    })
    expect(buildCrowdsecApp({ ...withKey, lapiUrl: 'http://crowdsec:8080/' }).api_url).toBe('http://crowdsec:8080/')
  })

  it('adds AppSec, failing open, when an AppSec URL is known', () => {
    expect(buildCrowdsecApp({ ...withKey, appsecUrl: 'http://crowdsec:7422' })).toMatchObject({
      appsec_url: 'http://crowdsec:7422',
      appsec_fail_open: true,
    })
  })

  it('is emitted once, however many hosts use the bouncer', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2 })] }),
    ) as any
    expect(config.apps.crowdsec).toEqual(buildCrowdsecApp(withKey))
  })
})

describe('buildCrowdsecHandler — per host', () => {
  it('is the first handler of the chain for hosts with bouncer_enabled, absent for the others', () => {
    expect(buildCrowdsecHandler()).toEqual({ handler: 'crowdsec' })
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec'],
        security: withKey,
        hosts: [buildHostSnapshot({ auth_required: true }), buildHostSnapshot({ id: 2, bouncer_enabled: false })],
      }),
    )
    expect(hostSubroutes(config, 'host1.example.test')[0].handle[0]).toEqual({ handler: 'crowdsec' })
    expect(JSON.stringify(hostSubroutes(config, 'host2.example.test'))).not.toContain('crowdsec')
  })

  it('no host wants it: no handler and no app', () => {
    const { config, warnings } = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot({ bouncer_enabled: false })] }),
    )
    expect(JSON.stringify(config)).not.toContain('crowdsec')
    expect(warnings).toEqual([])
  })
})

describe('AppSec (LAPI_APPSEC_URL) — per host, right after the bouncer', () => {
  const withAppsec = { ...withKey, appsecUrl: 'http://crowdsec:7422' }
  const waf = { inboundThreshold: 7, outboundThreshold: 4 }

  it('puts `appsec` right after `crowdsec`, with the threshold header set before and removed after', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec', 'waf', 'ratelimit'],
        security: withAppsec,
        waf,
        hosts: [buildHostSnapshot({ waf_enabled: true, rate_limit_enabled: true })],
      }),
    ) as any
    const chain = hostSubroutes(config, 'host1.example.test')[0].handle.map((h: any) => h.handler)
    // The last: the client's X-Auth-* headers taken out (the forward_auth step of a host without ForwardAuth).
    expect(chain).toEqual(['headers', 'crowdsec', 'appsec', 'headers', 'rate_limit', 'waf', 'headers'])
    const [set, , , del] = hostSubroutes(config, 'host1.example.test')[0].handle
    // `set` replaces whatever the client sent under that name.
    expect(set).toEqual({ handler: 'headers', request: { set: { [APPSEC_THRESHOLD_HEADER]: ['7'] } } })
    expect(del).toEqual({ handler: 'headers', request: { delete: [APPSEC_THRESHOLD_HEADER] } })
    expect(config.apps.crowdsec).toMatchObject({ appsec_url: 'http://crowdsec:7422', appsec_fail_open: true })
  })

  it('the header carries the stored inbound threshold: a change changes the pushed config', () => {
    const build = (inboundThreshold: number) =>
      buildProxyConfig(
        buildSnapshot({ modules: ['crowdsec'], security: withAppsec, waf: { ...waf, inboundThreshold }, hosts: [buildHostSnapshot()] }),
      ).config
    expect(JSON.stringify(build(3))).toContain(`"${APPSEC_THRESHOLD_HEADER}":["3"]`)
    expect(JSON.stringify(build(3))).not.toEqual(JSON.stringify(build(10)))
  })

  it('nothing of AppSec for a host without the bouncer, or without an AppSec URL', () => {
    const off = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec'],
        security: withAppsec,
        hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2, bouncer_enabled: false })],
      }),
    ).config
    expect(JSON.stringify(hostSubroutes(off, 'host2.example.test'))).not.toMatch(/appsec/i)
    const none = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot()] })).config as any
    expect(hostSubroutes(none, 'host1.example.test')[0].handle).toEqual([{ handler: 'crowdsec' }, buildForwardAuthHeaderStripHandler()])
    expect(none.apps.crowdsec.appsec_url).toBeUndefined()
  })

  it('names AppSec in the warning when the bouncer cannot be applied', () => {
    const { config, warnings } = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: { ...withAppsec, bouncerKey: null }, hosts: [buildHostSnapshot()] }),
    )
    expect(JSON.stringify(config)).not.toMatch(/appsec/i)
    expect(warnings).toEqual([
      'no bouncer key is configured (LAPI_BOUNCER_KEY); the bouncer and AppSec are not applied to 1 host(s): host1.example.test',
    ])
  })
})

describe('buildCrowdsecHandler — module or key missing', () => {
  it('without the crowdsec module: nothing of crowdsec, one warning naming the hosts', () => {
    const { config, warnings } = buildProxyConfig(
      buildSnapshot({ modules: ['waf'], security: withKey, hosts: [buildHostSnapshot(), buildHostSnapshot({ id: 2 })] }),
    )
    expect(JSON.stringify(config)).not.toContain('crowdsec')
    expect(warnings).toEqual([
      'the proxy has no crowdsec module (PROXY_MODULES); the bouncer is not applied to 2 host(s): host1.example.test, host2.example.test',
    ])
  })

  it('also warns on a stock proxy (PROXY_MODULES=none), and caps the list of names', () => {
    const hosts = [1, 2, 3, 4, 5, 6, 7].map((id) => buildHostSnapshot({ id }))
    const { warnings } = buildProxyConfig(buildSnapshot({ modules: [], hosts }))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/not applied to 7 host\(s\): host1\.example\.test, .*host5\.example\.test and 2 more$/)
  })

  it('with the module but no bouncer key: nothing of crowdsec, and a warning', () => {
    const { config, warnings } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: { ...withKey, bouncerKey: null } }))
    expect(JSON.stringify(config)).not.toContain('crowdsec')
    expect(warnings.join()).toMatch(/no bouncer key is configured \(LAPI_BOUNCER_KEY\)/)
  })
})

describe('the whitelist — whitelisted sources skip the bouncer whatever decisions exist', () => {
  const whitelist = ['198.51.100.0/28', '2001:db8::1']

  it('puts the bouncer (and AppSec) in a route of its own that whitelisted sources do not match', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec', 'waf'],
        security: { ...withKey, appsecUrl: 'http://crowdsec:7422' },
        whitelist,
        hosts: [buildHostSnapshot({ waf_enabled: true })],
      }),
    ) as any
    const [gate, rest] = hostSubroutes(config, 'host1.example.test')
    expect(gate.match).toEqual([{ not: [{ remote_ip: { ranges: whitelist } }] }])
    expect(gate.handle.map((h: any) => h.handler)).toEqual(['headers', 'crowdsec', 'appsec', 'headers'])
    expect(gate.terminal).toBeUndefined()
    // The WAF still looks at whitelisted sources: the whitelist is about bans.
    expect(rest.handle.map((h: any) => h.handler)).toEqual(['waf', 'headers'])
  })

  it('judges the same client address as the LAN gate: client_ip with trusted proxies', () => {
    const clientIp = { trustedProxies: ['198.51.100.40/32'], headers: ['X-Forwarded-For'] }
    const { config } = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, whitelist, clientIp, hosts: [buildHostSnapshot({ lan_only: true })] }),
    )
    const [lan, gate] = hostSubroutes(config, 'host1.example.test')
    expect(lan.match[0].not[0].client_ip).toBeDefined()
    expect(gate.match).toEqual([{ not: [{ client_ip: { ranges: whitelist } }] }])
  })

  it('an empty whitelist keeps the bouncer in the host chain', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, whitelist: [], hosts: [buildHostSnapshot()] }),
    )
    expect(hostSubroutes(config, 'host1.example.test')[0]).toEqual({
      handle: [{ handler: 'crowdsec' }, buildForwardAuthHeaderStripHandler()],
    })
  })
})

describe('buildBouncerWarmupRoute — the sources banned at push time, refused while the new bouncer loads', () => {
  const warmup = { untilMs: 1_800_000_000_000, sources: ['198.51.100.200', '203.0.113.0/24'] }
  const tlsHost = buildHostSnapshot({ id: 3, domain: 'tls.example.test', tls_mode: 'auto' })

  it('is the first route of each server that has bouncer hosts, for those hosts only, until the given time', () => {
    const hosts = [
      buildHostSnapshot({ aliases: ['www.host1.example.test'] }),
      buildHostSnapshot({ id: 2, bouncer_enabled: false }),
      tlsHost,
    ]
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts, bouncerWarmup: warmup })) as any
    const http = config.apps.http.servers.http.routes[0],
      https = config.apps.http.servers.https.routes[0]
    expect(http).toEqual(buildBouncerWarmupRoute('http', ['host1.example.test', 'www.host1.example.test'], warmup))
    expect(https['@id']).toBe('bouncer_warmup_https')
    expect(https.match[0].host).toEqual(['tls.example.test'])
    expect(http.match[0].expression).toBe('int({time.now.unix_ms}) < 1800000000000')
    expect(http.handle[0].routes).toEqual([
      { match: [{ client_ip: { ranges: warmup.sources } }], handle: [{ handler: 'static_response', status_code: 403 }] },
    ])
  })

  it('nothing banned, or no host with the bouncer: no route', () => {
    const none = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, bouncerWarmup: { ...warmup, sources: [] } }),
    ).config
    expect(JSON.stringify(none)).not.toContain('bouncer_warmup')
    const off = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec'],
        security: withKey,
        hosts: [buildHostSnapshot({ bouncer_enabled: false })],
        bouncerWarmup: warmup,
      }),
    ).config
    expect(JSON.stringify(off)).not.toContain('bouncer_warmup')
  })

  it('leaves the hash unchanged: the identity of a configuration is what the database says', () => {
    const base = buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot(), tlsHost] })
    const plain = buildProxyConfig(base).config
    const gated = buildProxyConfig({ ...base, bouncerWarmup: warmup }).config
    const later = buildProxyConfig({ ...base, bouncerWarmup: { untilMs: warmup.untilMs + 1, sources: ['192.0.2.1'] } }).config
    expect(JSON.stringify(gated)).not.toBe(JSON.stringify(plain))
    expect(hashProxyConfig(gated)).toBe(hashProxyConfig(plain))
    expect(hashProxyConfig(later)).toBe(hashProxyConfig(plain))
    expect(stripBouncerWarmup(gated)).toEqual(plain)
    expect(JSON.stringify(gated)).toContain('bouncer_warmup') // stripping copies, it never edits the pushed configuration
    expect(stripBouncerWarmup(plain)).toBe(plain)
    // The reconciler hashes the text it already serialised (a configuration built without warm-up routes).
    expect(hashOfConfigText(stableStringify(plain))).toBe(hashProxyConfig(gated))
  })
})

describe('buildBouncerWarmupRoute — the whitelist', () => {
  it('never refuses a whitelisted source, even one the engine has banned', () => {
    const warmup = { untilMs: 1_800_000_000_000, sources: ['198.51.100.140', '198.51.100.141'] }
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec'],
        security: withKey,
        whitelist: ['198.51.100.140'],
        bouncerWarmup: warmup,
        hosts: [buildHostSnapshot()],
      }),
    ) as any
    const inner = config.apps.http.servers.http.routes[0].handle[0].routes[0]
    expect(inner.match).toEqual([{ client_ip: { ranges: warmup.sources }, not: [{ client_ip: { ranges: ['198.51.100.140'] } }] }])
  })
})

describe('the configuration for an unreachable engine (snapshot.engineDown)', () => {
  const engineDown = { knownBanned: ['198.51.100.200', '198.51.100.192/28'] }

  it('a host that fails closed answers 503 to everything, after the LAN gate', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec'],
        security: withKey,
        engineDown,
        hosts: [buildHostSnapshot({ lan_only: true, engine_down_refuse: true })],
      }),
    )
    const [lan, refuse] = hostSubroutes(config, 'host1.example.test')
    expect(lan.handle[0].status_code).toBe(403)
    expect(refuse).toEqual({
      handle: [
        {
          handler: 'static_response',
          status_code: 503,
          headers: { 'Retry-After': ['30'] },
          body: 'Service unavailable: the security engine cannot be reached\n',
        },
      ],
      terminal: true,
    })
  })

  it('a host that fails open refuses the bans last known, whitelisted sources excepted, then the usual chain', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, engineDown, whitelist: ['198.51.100.193'], hosts: [buildHostSnapshot()] }),
    )
    const [known, chain] = hostSubroutes(config, 'host1.example.test')
    expect(known).toEqual({
      match: [{ remote_ip: { ranges: engineDown.knownBanned }, not: [{ remote_ip: { ranges: ['198.51.100.193'] } }] }],
      handle: [{ handler: 'static_response', status_code: 403 }],
      terminal: true,
    })
    expect(chain.handle.map((h: any) => h.handler)).toContain('crowdsec')
  })

  it('with the engine up nothing of this is emitted, and a host without the bouncer never gets the known bans', () => {
    const up = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, hosts: [buildHostSnapshot({ engine_down_refuse: true })] }),
    ).config
    expect(JSON.stringify(up)).not.toContain('503')
    const noBouncer = buildProxyConfig(
      buildSnapshot({ modules: ['crowdsec'], security: withKey, engineDown, hosts: [buildHostSnapshot({ bouncer_enabled: false })] }),
    ).config
    expect(JSON.stringify(noBouncer)).not.toContain('198.51.100.200')
  })

  it('AppSec fails closed only when every AppSec host fails closed', () => {
    const security = { ...withKey, appsecUrl: 'http://crowdsec:7422' }
    const build = (hosts: any[]) =>
      (buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security, hosts })).config as any).apps.crowdsec.appsec_fail_open
    expect(build([buildHostSnapshot({ engine_down_refuse: true })])).toBe(false)
    expect(build([buildHostSnapshot({ engine_down_refuse: true }), buildHostSnapshot({ id: 2 })])).toBe(true)
    expect(build([buildHostSnapshot()])).toBe(true)
  })
})
