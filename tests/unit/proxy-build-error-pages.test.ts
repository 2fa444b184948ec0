import { describe, expect, it } from 'vitest'
import { PAGE_STATUSES, buildServerErrorPages, hostShowsPages } from '../../server/utils/proxy/build/error-pages'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { ACCESS_DENIED_BODY } from '../../server/utils/proxy/build/access-list'
import { LAN_GATE_BODY } from '../../server/utils/proxy/build/lan-gate'
import { hostBody } from '../../server/utils/hosts/schemas'
import { buildAccessListSnapshot, buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

// Pages of our own (docs/hosts.md, "Pages"): the builder's part.

const gated = (overrides: Parameters<typeof buildHostSnapshot>[0] = {}) =>
  buildHostSnapshot({ lan_only: true, domain: 'shop.example.test', ...overrides })
const denyAll = buildAccessListSnapshot({ default_action: 'deny', ip_rules: [{ action: 'allow', source: '10.0.0.0/8' }] as any })

/** Every handler of a config, at any depth. */
function handlers(node: unknown, out: any[] = []): any[] {
  if (Array.isArray(node)) for (const n of node) handlers(n, out)
  else if (node && typeof node === 'object') {
    if ('handler' in node) out.push(node)
    for (const v of Object.values(node)) handlers(v, out)
  }
  return out
}

describe('hostShowsPages — the host override wins over the global setting', () => {
  it.each([
    ['inherit', true, true],
    ['inherit', false, false],
    ['inherit', undefined, false],
    ['on', false, true],
    ['on', undefined, true],
    ['off', true, false],
  ] as const)('host %s, global %s -> %s', (error_pages, global, expected) => {
    expect(hostShowsPages(buildHostSnapshot({ error_pages }), buildSnapshot({ errorPages: global }))).toBe(expected)
  })
})

describe('pages off: the bare answers of before, byte for byte', () => {
  it('an upgraded panel (setting off, hosts inherit) pushes the same configuration as a snapshot without the feature', () => {
    const hosts = [gated(), buildHostSnapshot({ id: 2, domain: 'tls.example.test', tls_mode: 'auto' })]
    const security = { lapiUrl: 'http://127.0.0.1:8080', bouncerKey: 'k', tickerInterval: '15s', appsecUrl: null }
    const before = buildSnapshot({ hosts, accessLists: [{ ...denyAll, host_ids: [1, 2] }], modules: ['crowdsec'], security })
    // The snapshot before migration 0041: no setting, no host field.
    const legacy = { ...before, hosts: hosts.map(({ error_pages: _, ...h }) => h as typeof h & { error_pages: 'inherit' }) }
    delete (legacy as { errorPages?: boolean }).errorPages
    const now = buildProxyConfig({ ...before, errorPages: false }).config
    expect(stableStringify(now)).toBe(stableStringify(buildProxyConfig(legacy).config))
    expect(JSON.stringify(now)).not.toContain('errors')
    expect(JSON.stringify(now)).toContain(JSON.stringify(LAN_GATE_BODY))
    expect(JSON.stringify(now)).toContain(JSON.stringify(ACCESS_DENIED_BODY))
  })
  it('a host turned off keeps its bare refusal while the global setting is on', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [gated({ error_pages: 'off' })], errorPages: true }))
    expect(hostSubroutes(config, 'shop.example.test')[0].handle).toEqual([
      { handler: 'static_response', status_code: 403, body: LAN_GATE_BODY },
    ])
    expect((config as any).apps.http.servers.http.errors).toBeUndefined()
  })
})

describe('pages on', () => {
  const build = (overrides = {}) =>
    buildProxyConfig(buildSnapshot({ hosts: [gated(overrides)], accessLists: [denyAll], errorPages: true, ...overrides })).config as any

  it("the gates' refusals become errors the server's error routes answer", () => {
    const config = build()
    const routes = hostSubroutes(config, 'shop.example.test')
    // First the host's name for its page, then the gate.
    expect(routes[0].handle).toEqual([{ handler: 'vars', panel_site: 'shop.example.test' }])
    expect(routes[1].handle).toEqual([
      { handler: 'vars', panel_refusal: 'Access denied: LAN only' },
      { handler: 'error', status_code: 403 },
    ])
    const bare = handlers(routes).filter((h) => h.handler === 'static_response' && h.status_code === 403)
    expect(bare).toEqual([])
    const errors = config.apps.http.servers.http.errors.routes
    expect(errors).toHaveLength(1)
    expect(errors[0].match).toEqual([{ vars: { '{http.vars.panel_site}': ['shop.example.test'] } }])
    const byStatus = errors[0].handle[0].routes
    expect(byStatus.map((r: any) => r.match[0].vars['{http.error.status_code}'])).toEqual([['403'], ['429'], ['502'], ['503'], ['504']])
  })

  it('the bouncer returns its ban as an error (enable_caddy_error) only while some host shows pages', () => {
    const security = { lapiUrl: 'http://127.0.0.1:8080', bouncerKey: 'k', tickerInterval: '15s', appsecUrl: null }
    const withBouncer = (errorPages: boolean, error_pages: 'inherit' | 'off' = 'inherit') =>
      (buildProxyConfig(buildSnapshot({ modules: ['crowdsec'], security, hosts: [gated({ error_pages })], errorPages })).config as any).apps
        .crowdsec
    expect(withBouncer(true).enable_caddy_error).toBe(true)
    expect(withBouncer(false)).not.toHaveProperty('enable_caddy_error')
    expect(withBouncer(true, 'off')).not.toHaveProperty('enable_caddy_error')
  })

  it('a TLS host gets its error route on the https server only', () => {
    const config = build({ tls_mode: 'auto' })
    expect(config.apps.http.servers.http.errors).toBeUndefined()
    expect(config.apps.http.servers.https.errors.routes[0].match).toEqual([{ vars: { '{http.vars.panel_site}': ['shop.example.test'] } }])
  })

  it('negotiates HTML, JSON and plain text, each naming the host, the time and the request id, bounded in size', () => {
    const routes = buildServerErrorPages('http', [gated()], buildSnapshot({ errorPages: true })).errors as any
    for (const [i, status] of Object.keys(PAGE_STATUSES).entries()) {
      const [html, json, text] = routes.routes[0].handle[0].routes[i].handle[0].routes
      expect(html.match).toEqual([{ header: { Accept: ['*text/html*'] } }])
      expect(json.match).toEqual([{ header: { Accept: ['*application/json*'] } }])
      expect(text.match).toBeUndefined()
      for (const r of [html, json, text]) {
        const answer = r.handle[0]
        expect(answer.status_code).toBe(Number(status))
        expect(answer.headers['Cache-Control']).toEqual(['no-store'])
        expect(answer.body).toContain('{http.vars.panel_site}')
        expect(answer.body).toContain('{http.request.uuid}')
        expect(answer.body).toContain('{time.now.http}')
        expect(answer.body.length).toBeLessThan(2048)
        // The only placeholders are the panel's: every other brace is escaped.
        const placeholders = answer.body.replace(/\\[{}]/g, '').match(/\{[^}]*\}/g)
        expect(new Set(placeholders)).toEqual(
          new Set(['{http.request.uuid}', '{time.now.http}', '{http.vars.panel_refusal}', '{http.vars.panel_site}']),
        )
      }
      expect(JSON.parse(json.handle[0].body.replace(/\\([{}])/g, '$1'))).toMatchObject({
        host: '{http.vars.panel_site}',
        request_id: '{http.request.uuid}',
      })
      expect(html.handle[0].body.includes('http-equiv="refresh" content="10"')).toBe(Number(status) >= 500)
    }
  })

  it('hosts with the same message share one error route, matched by the name their own route sets', () => {
    // One route per host cost Caddy ~3 s and ~200 MB to load with 1,000 hosts (docs/performance.md).
    const hosts = [1, 2, 3].map((id) => gated({ id, domain: `s${id}.example.test`, aliases: [] }))
    hosts.push(gated({ id: 4, domain: 's4.example.test', aliases: [], error_page_message: 'Call Ann.' }))
    const config = buildProxyConfig(buildSnapshot({ hosts, accessLists: [{ ...denyAll, host_ids: [1, 2, 3, 4] }], errorPages: true }))
      .config as any
    for (const h of hosts) expect(hostSubroutes(config, h.domain)[0].handle).toEqual([{ handler: 'vars', panel_site: h.domain }])
    const errors = config.apps.http.servers.http.errors.routes
    expect(errors.map((r: any) => r.match)).toEqual([
      [{ vars: { '{http.vars.panel_site}': ['s1.example.test', 's2.example.test', 's3.example.test'] } }],
      [{ vars: { '{http.vars.panel_site}': ['s4.example.test'] } }],
    ])
    expect(JSON.stringify(errors[0])).not.toContain('Call Ann.')
    expect(JSON.stringify(errors[1])).toContain('Call Ann.')
  })
})

describe("the operator's message", () => {
  const bodies = (host: ReturnType<typeof gated>, errorPageMessage?: string) => {
    const routes = (buildServerErrorPages('http', [host], buildSnapshot({ errorPages: true, errorPageMessage })).errors as any).routes
    return routes[0].handle[0].routes[0].handle[0].routes.map((r: any) => r.handle[0].body as string)
  }
  it("the host's own wins over the global one; none leaves the page as it was", () => {
    expect(bodies(gated({ error_page_message: 'Call the desk' }), 'Global note')[2]).toContain('\nCall the desk\n')
    expect(bodies(gated(), 'Global note')[2]).toContain('\nGlobal note\n')
    expect(bodies(gated(), '')).toEqual(bodies(gated()))
  })
  it('is escaped for HTML, JSON and the replacer: a hostile message stays text', () => {
    const hostile = '</p><script>alert(1)</script> {http.request.header.Cookie} "quote\\'
    const [html, json, text] = bodies(gated({ error_page_message: hostile }))
    expect(html).not.toContain('<script>')
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62; \\{http.request.header.Cookie\\}')
    expect(JSON.parse(json.replace(/\\([{}])/g, '$1')).message).toBe(hostile)
    expect(text).toContain('\\{http.request.header.Cookie\\}')
    for (const body of [html, json, text]) expect(body.replace(/\\[{}]/g, '')).not.toContain('{http.request.header')
  })
})

describe("the message's validation", () => {
  const parse = (error_page_message: unknown) =>
    hostBody.safeParse({ domain: 'a.example.test', target_group_id: 1, tls_mode: 'none', error_page_message })
  it('takes one line of at most 200 characters; blank means the global one', () => {
    expect(parse('Call the desk').data?.error_page_message).toBe('Call the desk')
    expect(parse('   ').data?.error_page_message).toBeNull()
    expect(parse(null).data?.error_page_message).toBeNull()
    for (const bad of ['a\nb', 'tab\there', 'x'.repeat(201), 42]) expect(parse(bad).success, JSON.stringify(bad)).toBe(false)
    expect(parse('x'.repeat(201)).error?.issues[0]?.message).toBe('must be at most 200 characters')
  })
})

describe('the engine-down 503 (engine_down_refuse) with pages', () => {
  const engineDown = { knownBanned: [] as string[] }
  const security = { lapiUrl: 'http://crowdsec:8080', bouncerKey: 'bouncer-key', tickerInterval: '15s', appsecUrl: null }
  const refusal = (errorPages: boolean | undefined, overrides: Parameters<typeof buildHostSnapshot>[0] = {}) => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['crowdsec'],
        security,
        engineDown,
        errorPages,
        hosts: [buildHostSnapshot({ engine_down_refuse: true, ...overrides })],
      }),
    ) as any
    const routes = hostSubroutes(config, 'host1.example.test')
    // With pages, the host's name for its page comes first.
    return { config, route: routes[0].handle[0].panel_site ? routes[1] : routes[0] }
  }

  it("pages on: the refusal is an error 503 with its Retry-After and reason, answered by the host's 503 page", () => {
    const { config, route } = refusal(true)
    expect(route).toEqual({
      handle: [
        { handler: 'headers', response: { set: { 'Retry-After': ['30'] } } },
        { handler: 'vars', panel_refusal: 'Service unavailable: the security engine cannot be reached' },
        { handler: 'error', status_code: 503 },
      ],
      terminal: true,
    })
    const errorRoutes = config.apps.http.servers.http.errors.routes
    const statuses = errorRoutes[0].handle[0].routes.map((r: any) => r.match[0].vars['{http.error.status_code}'][0])
    expect(statuses).toContain('503')
  })

  it('pages off (setting off, or the host off): the bare text of before, byte for byte', () => {
    const bare = {
      handle: [
        {
          handler: 'static_response',
          status_code: 503,
          headers: { 'Retry-After': ['30'] },
          body: 'Service unavailable: the security engine cannot be reached\n',
        },
      ],
      terminal: true,
    }
    expect(refusal(false).route).toEqual(bare)
    expect(refusal(undefined).route).toEqual(bare)
    expect(refusal(true, { error_pages: 'off' }).route).toEqual(bare)
    expect(stableStringify(refusal(false).config)).toBe(stableStringify(refusal(undefined).config))
  })
})
