import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { STOCK_CADDY_BIN, edgeBinaries } from '../support/edge-bins'
import { httpRequest } from '../support/http'
import { registerTestSecret, startPanel, type PanelHandle } from '../support/panel'
import { makeTempDir } from '../support/processes'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// Caddyfile import through the real `caddy adapt` (the production binary) and
// the production Caddy serving what was imported.
const FIXTURES = join(import.meta.dirname, '../fixtures/caddyfiles')
const BASIC_PASSWORD = 'imported-secret-42'
registerTestSecret(BASIC_PASSWORD, 'secret-dns-token-77')

let stack: ProxyStack
let upA: Awaited<ReturnType<typeof startTestUpstream>>
let upB: Awaited<ReturnType<typeof startTestUpstream>>
const fixture = (name: string) =>
  readFileSync(join(FIXTURES, name), 'utf8').replaceAll('UP_A', `127.0.0.1:${upA.port}`).replaceAll('UP_B', `127.0.0.1:${upB.port}`)
const post = (caddyfile: string, apply = false) =>
  stack.panel.request('/api/import/caddyfile', { method: 'POST', cookie: stack.admin, body: { caddyfile, apply } })
const through = (host: string, path = '/', headers: Record<string, string> = {}) =>
  httpRequest({ port: stack.httpPort, host, path, headers })
const countRows = async (table: string) => Number((await stack.panel.db().execute(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n)
const created = (report: any, kind: string) =>
  report.items
    .filter((i: any) => i.kind === kind && i.outcome === 'create')
    .map((i: any) => i.name)
    .sort()

beforeAll(async () => {
  upA = await startTestUpstream()
  upB = await startTestUpstream()
  stack = await startProxyStack({ env: { PANEL_CADDY_BIN: edgeBinaries().caddy } })
  // TLS sites of the fixtures get ACME hosts: orders go to a CA address where nothing listens.
  expect(
    (
      await stack.panel.request('/api/settings', {
        method: 'PUT',
        cookie: stack.admin,
        body: { 'acme.ca_url': 'https://127.0.0.1:9/directory' },
      })
    ).status,
  ).toBe(200)
})
afterAll(async () => {
  await stack?.stop()
  await upA?.stop()
  await upB?.stop()
})

describe('Caddyfile import — home lab (snippets, basic auth, redirects, respond)', () => {
  it('the dry run lists what it would create, with lines, and writes nothing', async () => {
    const before = await countRows('hosts')
    const res = await post(fixture('homelab.Caddyfile'))
    expect(res.status).toBe(200)
    const r = res.json
    expect(r.applied).toBe(false)
    expect(created(r, 'host')).toEqual(['git.example.test', 'media.example.test', 'old.example.test', 'status.example.test'])
    expect(created(r, 'access_list')).toEqual(['media.example.test basic auth'])
    // A site that only redirects is a redirect host: no rule, and its {uri} is kept.
    expect(created(r, 'rule')).toEqual(['status.example.test /* (respond)', 'status.example.test /health (respond)'])
    expect(r.not_importable).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'admin', source: 'Caddyfile line 5' }),
        expect.objectContaining({ name: 'log', source: 'Caddyfile line 24' }),
      ]),
    )
    expect(r.imperfect).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'reverse_proxy',
          source: 'Caddyfile line 21',
          why: 'git.example.test: reverse_proxy settings not carried over: headers',
        }),
      ]),
    )
    expect(r.imperfect.filter((n: any) => n.source === 'Caddyfile line 28')).toEqual([])
    // The bcrypt hash is a secret: in no answer.
    expect(res.text).not.toMatch(/\$2a\$/)
    expect(await countRows('hosts')).toBe(before)
  })

  it('apply creates it all in one reconcile, audited, and the production Caddy serves it', async () => {
    const audits = await countRows("logs WHERE source = 'audit' AND message = 'proxy_reconcile'")
    const res = await post(fixture('homelab.Caddyfile'), true)
    expect(res.status).toBe(200)
    expect(res.json.applied).toBe(true)
    expect(res.json.reconcile.status).toBe('applied')
    expect(await countRows("logs WHERE source = 'audit' AND message = 'proxy_reconcile'")).toBe(audits + 1)
    expect(await countRows("logs WHERE source = 'audit' AND message = 'import_apply'")).toBe(1)

    expect((await through('git.example.test', '/repo')).status).toBe(200)
    expect(upA.requests.at(-1)!.url).toBe('/repo')
    const redirect = await through('old.example.test', '/x?y=1')
    expect(redirect.status).toBe(301)
    expect(redirect.headers.location).toBe('https://media.example.test/x?y=1')
    const old = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json.find((h: any) => h.domain === 'old.example.test')
    expect(old).toMatchObject({ kind: 'redirect', target_group_id: null, redirect_keep_path: true, redirect_status: 301 })
    expect((await through('status.example.test', '/health')).body).toBe('ok')
    const maintenance = await through('status.example.test', '/other')
    expect([maintenance.status, maintenance.body]).toEqual([503, 'maintenance'])
  })

  it("the snippet's basic auth protects the site with the imported bcrypt hash: 401 without, 401 wrong, 200 right", async () => {
    expect((await through('media.example.test')).status).toBe(401)
    const basic = (p: string) => ({ authorization: `Basic ${Buffer.from(`ann:${p}`).toString('base64')}` })
    expect((await through('media.example.test', '/', basic('not-the-password'))).status).toBe(401)
    expect((await through('media.example.test', '/', basic(BASIC_PASSWORD))).status).toBe(200)
  })

  it('a new site whose alias another host has is not importable, and says which host', async () => {
    const gitId = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json.find(
      (h: any) => h.domain === 'git.example.test',
    ).id
    const r = (await post(`http://fresh.example.test, http://git.example.test {\n\treverse_proxy 127.0.0.1:${upA.port}\n}\n`, true)).json
    expect(r.items.filter((i: any) => i.outcome === 'create')).toEqual([])
    expect(r.not_importable).toEqual([
      {
        kind: 'host',
        name: 'fresh.example.test',
        source: 'Caddyfile line 1',
        why: `alias git.example.test is already used by host ${gitId}`,
      },
    ])
  })

  it('a second import of the same file creates nothing', async () => {
    const counts = await Promise.all(['hosts', 'target_groups', 'rules', 'access_lists'].map(countRows))
    const res = await post(fixture('homelab.Caddyfile'), true)
    expect(res.status).toBe(200)
    expect(res.json.items.filter((i: any) => i.outcome === 'create')).toEqual([])
    expect(res.json.items.filter((i: any) => i.kind === 'host').map((i: any) => i.outcome)).toEqual([
      'exists',
      'exists',
      'exists',
      'exists',
    ])
    expect(res.json.reconcile).toBeUndefined()
    expect(await Promise.all(['hosts', 'target_groups', 'rules', 'access_lists'].map(countRows))).toEqual(counts)
  })
})

describe('Caddyfile import — load balancing and matchers', () => {
  it('weighted upstreams with a health check become a target group; path matchers become rules; the rest is listed', async () => {
    const r = (await post(fixture('loadbalance.Caddyfile'), true)).json
    expect(created(r, 'host')).toEqual(['app.example.test', 'shop.example.test'])
    const groups = (await stack.panel.request('/api/target-groups', { cookie: stack.admin })).json
    const shop = groups.find((g: any) => g.name === 'shop.example.test')
    expect(shop).toMatchObject({
      lb_policy: 'weighted_round_robin',
      targets: [
        { address: `127.0.0.1:${upA.port}`, weight: 3 },
        { address: `127.0.0.1:${upB.port}`, weight: 1 },
      ],
      health_check: { path: '/healthz', interval_seconds: 10, expect_status: 200 },
    })
    const hosts = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json
    expect(hosts.find((h: any) => h.domain === 'shop.example.test').aliases).toEqual(['www.shop.example.test'])
    const why = (name: string) => r.not_importable.filter((n: any) => n.name === name).map((n: any) => n.source)
    // `encode zstd gzip` turns the host's compression on (it used to be "not importable").
    expect(why('encode')).toEqual([])
    expect(hosts.find((h: any) => h.domain === 'shop.example.test').compression).toBe('on')
    expect(why('file_server')).toEqual(['Caddyfile line 14'])
    expect(why('php_fastcgi')).toEqual(['Caddyfile line 27'])
    // php_fastcgi expands into routes behind file matchers: named at its line too.
    expect(why('matcher file')).toEqual(['Caddyfile line 27'])
    expect(r.not_importable).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'matcher remote_ip', source: 'Caddyfile line 7' }),
        expect.objectContaining({ kind: 'site', name: ':9090', source: 'Caddyfile line 33' }),
        expect.objectContaining({ kind: 'site', name: '*.wild.example.test', source: 'Caddyfile line 37' }),
      ]),
    )
    expect(r.imperfect).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'lb_policy',
          source: 'Caddyfile line 29',
          why: 'app.example.test: lb_policy cookie has no equivalent; round_robin instead',
        }),
      ]),
    )

    // Through the proxy: /api/* to B, the rest balanced over A and B.
    const before = upB.requests.length
    expect((await through('shop.example.test', '/api/items')).status).toBe(200)
    expect(upB.requests.length).toBe(before + 1)
    expect(upB.requests.at(-1)!.url).toBe('/api/items')
    expect((await through('app.example.test', '/ws/chat')).status).toBe(200)
    expect(upB.requests.at(-1)!.url).toBe('/ws/chat')
  })
})

describe('Caddyfile import — encode and header', () => {
  it('map to compression and header rules (HSTS to its switch); what does not map is listed with its line', async () => {
    const caddyfile = [
      'http://headers.example.test {',
      '\tencode gzip',
      '\theader X-Served-By edge',
      '\theader -Server',
      '\theader +Link "</a.css>; rel=preload"',
      '\theader Strict-Transport-Security "max-age=31536000; includeSubDomains; preload"',
      '\trequest_header X-Tenant blue',
      '\trequest_header X-Auth-User forged',
      '\theader X-Host {host}',
      `\treverse_proxy 127.0.0.1:${upA.port}`,
      '}',
      '',
    ].join('\n')
    const r = (await post(caddyfile, true)).json
    expect(created(r, 'host')).toEqual(['headers.example.test'])
    const host = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json.find(
      (h: any) => h.domain === 'headers.example.test',
    )
    expect(host.compression).toBe('on')
    expect(host.hsts).toEqual({ max_age: 31_536_000, include_subdomains: true, preload: true })
    expect(host.header_rules).toEqual(
      expect.arrayContaining([
        { direction: 'response', action: 'set', name: 'X-Served-By', value: 'edge' },
        { direction: 'response', action: 'remove', name: 'Server', value: null },
        { direction: 'response', action: 'add', name: 'Link', value: '</a.css>; rel=preload' },
        { direction: 'request', action: 'set', name: 'X-Tenant', value: 'blue' },
      ]),
    )
    expect(host.header_rules).toHaveLength(4)
    const refused = (name: string) => r.not_importable.find((n: any) => n.name === name)
    expect(refused('header X-Auth-User')).toMatchObject({ source: 'Caddyfile line 8', why: expect.stringMatching(/X-Auth-\* headers/) })
    expect(refused('header X-Host')).toMatchObject({ source: 'Caddyfile line 9', why: expect.stringMatching(/must not contain \{ or \}/) })
    // Through the production Caddy: the imported rules apply.
    const res = await through('headers.example.test', '/imported-headers')
    expect(res.headers['x-served-by']).toBe('edge')
    expect(upA.requests.findLast((q) => q.url === '/imported-headers')!.headers['x-tenant']).toBe('blue')
  })
})

describe('Caddyfile import — TLS, handle blocks, path-scoped basic auth', () => {
  it("global email becomes the hosts' ACME email; http:// is plain; tls internal and path-only basic auth are imperfect", async () => {
    const r = (await post(readFileSync(join(FIXTURES, 'mixed.Caddyfile'), 'utf8'), true)).json
    expect(created(r, 'host')).toEqual(['api.example.com', 'app.example.com', 'internal.example.com', 'plain.example.com'])
    const hosts = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json
    const host = (d: string) => hosts.find((h: any) => h.domain === d)
    expect(host('app.example.com')).toMatchObject({ tls_mode: 'auto', tls_email: 'ops@example.com', aliases: ['www.app.example.com'] })
    expect(host('plain.example.com')).toMatchObject({ tls_mode: 'none' })
    expect(host('internal.example.com')).toMatchObject({ tls_mode: 'auto', tls_email: null })
    // Each created host's line says the TLS it got, and links by its id.
    const items = Object.fromEntries(r.items.filter((i: any) => i.kind === 'host').map((i: any) => [i.name, i]))
    for (const d of ['api.example.com', 'app.example.com', 'internal.example.com', 'plain.example.com']) {
      expect(items[d].id).toBe(host(d).id)
      expect(items[d].tls.mode).toBe(host(d).tls_mode)
    }
    expect(items['app.example.com'].tls).toEqual({
      mode: 'auto',
      text: 'Automatic (ACME), HTTP-01 challenge, from 127.0.0.1:9',
      warning: null,
    })
    expect(items['plain.example.com'].tls).toEqual({ mode: 'none', text: 'None (plain HTTP)', warning: null })
    const rules = (await stack.panel.request(`/api/hosts/${host('api.example.com').id}/rules`, { cookie: stack.admin })).json
    expect(rules.map((x: any) => [x.path, x.action, x.redirect_url ?? x.respond_body ?? x.target_group_id !== null])).toEqual([
      ['/old/*', 'redirect', 'https://new.example.com'],
      ['/ping', 'respond', 'pong'],
      ['/v1/*', 'proxy', true],
    ])
    expect(r.imperfect.map((n: any) => `${n.source}: ${n.why}`)).toEqual(
      expect.arrayContaining([
        'Caddyfile line 26: api.example.com: basic_auth for /admin/* only: an access list protects the whole host',
        "Caddyfile line 38: internal.example.com: Caddy's internal CA has no equivalent; the host gets an ACME certificate (tls_mode auto) instead, or upload one",
        "Caddyfile line 23: api.example.com: redirect to https://new.example.com{http.request.uri}: the request's path is not appended (rules redirect to a fixed URL: https://new.example.com)",
      ]),
    )
  })
})

describe('Caddyfile import — sites that answer themselves', () => {
  it('a site whose only route is a respond is a static host; a path-only redir stays a rule on the placeholder group', async () => {
    const groups = await countRows('target_groups')
    const r = (
      await post(
        'http://teapot.example.test {\n\trespond "short and stout" 418\n}\nhttp://moved.example.test {\n\tredir /x https://other.example.test/y 307\n}\n',
        true,
      )
    ).json
    expect(created(r, 'host')).toEqual(['moved.example.test', 'teapot.example.test'])
    expect(created(r, 'rule')).toEqual(['moved.example.test /x (redirect)'])
    const hosts = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json
    expect(hosts.find((h: any) => h.domain === 'teapot.example.test')).toMatchObject({
      kind: 'static',
      target_group_id: null,
      static_status: 418,
      static_body: 'short and stout',
    })
    expect(hosts.find((h: any) => h.domain === 'moved.example.test')).toMatchObject({ kind: 'proxy' })
    const teapot = await through('teapot.example.test', '/any')
    expect([teapot.status, teapot.body, teapot.headers['content-type']]).toEqual([418, 'short and stout', 'text/plain; charset=utf-8'])
    const moved = await through('moved.example.test', '/x')
    expect([moved.status, moved.headers.location]).toEqual([307, 'https://other.example.test/y'])
    // Only the redirect with a path needed the placeholder group (made here, or already there).
    expect(await countRows('target_groups')).toBeLessThanOrEqual(groups + 1)
  })
})

describe('Caddyfile import — TLS it cannot carry over', () => {
  it('the dry run warns when a host would ask a public CA at once (no default ACME directory set)', async () => {
    const setCa = (url: string) =>
      stack.panel.request('/api/settings', { method: 'PUT', cookie: stack.admin, body: { 'acme.ca_url': url } })
    expect((await setCa('')).status).toBe(200)
    try {
      const r = (
        await post('blog.example.test {\n\treverse_proxy 127.0.0.1:1\n}\nhttp://plain.example.test {\n\treverse_proxy 127.0.0.1:1\n}\n')
      ).json
      const tls = Object.fromEntries(r.items.filter((i: any) => i.kind === 'host').map((i: any) => [i.name, i.tls]))
      expect(tls['blog.example.test']).toEqual({
        mode: 'auto',
        text: "Automatic (ACME), HTTP-01 challenge, from Let's Encrypt (the proxy's default CA)",
        warning:
          'importing starts a certificate order at a public CA at once: blog.example.test must point at this proxy from the Internet, or the order fails. To try an import first, set "Default ACME directory URL" in Settings -> Certificates (ACME) to a test CA, or change the host\'s TLS mode to None after importing.',
      })
      expect(tls['plain.example.test']).toEqual({ mode: 'none', text: 'None (plain HTTP)', warning: null })
      expect(r.items.some((i: any) => 'id' in i)).toBe(false) // a dry run created nothing
    } finally {
      expect((await setCa('https://127.0.0.1:9/directory')).status).toBe(200)
    }
  })

  it('certificate files and a DNS challenge are imperfect (never their credentials), the host gets ACME', async () => {
    const r = (
      await post(
        'files.example.test {\n\ttls cert.pem key.pem\n\treverse_proxy 127.0.0.1:1\n}\ndns.example.test {\n\ttls {\n\t\tdns cloudflare secret-dns-token-77\n\t}\n\treverse_proxy 127.0.0.1:1\n}\n',
      )
    ).json
    expect(r.imperfect.map((n: any) => `${n.source}: ${n.why}`)).toEqual(
      expect.arrayContaining([
        "Caddyfile line 2: files.example.test: certificate files are not read from the panel's machine; the host gets ACME until you upload the certificate (Certificates screen)",
        'Caddyfile line 7: dns.example.test: the DNS challenge (cloudflare) is not carried over, nor its credentials; the host uses HTTP-01: set up a DNS provider to switch',
      ]),
    )
    expect(JSON.stringify(r)).not.toContain('secret-dns-token-77')
  })
})

describe('Caddyfile import — layer4 (raw TCP/UDP)', () => {
  it('each layer4 server and a layer4 listener wrapper are reported in words with their line; the web site beside them is imported', async () => {
    const res = await post(fixture('layer4.Caddyfile'))
    expect(res.status).toBe(200)
    expect(created(res.json, 'host')).toEqual(['l4site.example.test'])
    const l4 = res.json.not_importable.filter((n: any) => n.kind === 'layer4')
    expect(l4).toEqual([
      {
        kind: 'layer4',
        name: ':2222',
        source: 'Caddyfile line 5',
        why: 'raw TCP/UDP routing (the layer4 option) is not imported (it does: proxy to 10.0.0.9:22): create it as a stream on the Streams screen (a listen port or range, TCP or UDP, and a target group of its upstreams)',
      },
      {
        kind: 'layer4',
        name: 'udp/:5353',
        source: 'Caddyfile line 10',
        why: 'raw TCP/UDP routing (the layer4 option) is not imported (it does: proxy to udp/10.0.0.53:53): create it as a stream on the Streams screen (a listen port or range, TCP or UDP, and a target group of its upstreams)',
      },
      {
        kind: 'layer4',
        name: 'listener wrapper of :443',
        source: 'Caddyfile line 2',
        why: 'raw TCP routing in front of the web server (a layer4 listener wrapper) is not imported (it does: when tls matches: proxy to 10.0.0.10:443; the rest goes on unchanged): a stream with server names (TLS SNI) on the HTTPS port shares it with the web hosts',
      },
    ])
    // The layer4 option is reported server by server, not again as a generic global option.
    expect(res.json.not_importable.filter((n: any) => n.kind === 'global option').map((n: any) => n.name)).toEqual(['servers'])
  })
})

describe('Caddyfile import — refusals change nothing', () => {
  it("a Caddyfile that does not adapt is a 400 with its line and a generic cause, none of caddy's own words", async () => {
    const counts = await Promise.all(['hosts', 'target_groups', 'rules'].map(countRows))
    const res = await post('a.example.test {\n\treverse_proxy 127.0.0.1:1\n\tno_such_directive on\n}\n', true)
    expect(res.status).toBe(400)
    expect(res.json.error).toBe('Caddyfile does not adapt: line 3: unrecognized directive')
    expect(await Promise.all(['hosts', 'target_groups', 'rules'].map(countRows))).toEqual(counts)
    const unclosed = await post('a.example.test {\n\trespond "x"\n')
    expect(unclosed.json.error).toBe("Caddyfile does not adapt: line 2: a block is not closed: '}' expected")
  })

  it('importing a file of the panel machine is refused before caddy runs', async () => {
    const res = await post('a.example.test {\n\timport /etc/hostname\n}\n')
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^caddyfile: line 2: import \/etc\/hostname: importing files is not supported/)
  })

  it('environment placeholders are refused: caddy would expand them into the text before reading it', async () => {
    const res = await post('http://env.example.test {\n\trespond "{$PANEL_MASTER_KEY}x"\n}\n')
    expect(res.status).toBe(400)
    expect(res.json.error).toBe(
      'caddyfile: line 2: environment placeholders ({$NAME}) are not supported, since Caddy expands them into the text before reading it: write the value itself',
    )
  })

  it('bad bodies are 400s', async () => {
    expect(
      (await stack.panel.request('/api/import/caddyfile', { method: 'POST', cookie: stack.admin, body: { caddyfile: 5 } })).status,
    ).toBe(400)
    expect((await post('   ')).json.error).toBe('caddyfile: is empty')
  })
})

// Every spelling that makes Caddy 2.11 or 2.6 read a file (each was seen to
// splice the planted file in, and its first line into caddy's error). The
// planted line is a registered test secret: any answer or output carrying it
// fails the test at once.
const PLANTED_LINE = 'PLANTED-FIRST-LINE-d41d8cd98f00'
registerTestSecret(PLANTED_LINE)
const plantedDir = makeTempDir('planted-')
const PLANTED = join(plantedDir, 'secret.txt')
writeFileSync(PLANTED, `${PLANTED_LINE} x\nsecond line\n`)
const SPELLINGS: Array<[string, string, number]> = [
  ['a plain import', `a.example.test {\n\timport ${PLANTED}\n}\n`, 2],
  ['an environment default', `a.example.test {\n\t{$NOPE:import ${PLANTED}}\n}\n`, 2],
  ['a {file.} placeholder', `http://a.example.test {\n\trespond "{file.${PLANTED}}"\n}\n`, 2],
  ['an import on the line of the opening brace', `a.example.test { import ${PLANTED}\n}\n`, 1],
  ['a glob', `a.example.test {\n\timport ${plantedDir}/*.txt\n}\n`, 2],
  [
    'a snippet named like the file, defined after the import',
    `a.example.test {\n\timport ${PLANTED}\n}\n(${PLANTED}) {\n\trespond x\n}\n`,
    2,
  ],
  ['an import after a heredoc closed mid-line', `a.example.test {\n\trespond <<EOF\n\thi\n\tEOF 200\n\timport ${PLANTED}\n}\n`, 5],
  ['a heredoc whose body is import', `a.example.test {\n\t<<EOF\n\timport\n\tEOF ${PLANTED}\n}\n`, 3],
  ['a heredoc body Caddy 2.6 reads as lines', `a.example.test {\n\trespond <<EOF\n\timport ${PLANTED}\n\tEOF\n}\n`, 3],
  ['a quoted import', `a.example.test {\n\t"import" ${PLANTED}\n}\n`, 2],
  ['an escaped newline before the target', `a.example.test {\n\timport\\\n${PLANTED}\n}\n`, 2],
  ['a no-break space', `a.example.test {\n\u00a0import\u00a0${PLANTED}\n}\n`, 2],
  ['U+2028', `a.example.test {\n\timport\u2028${PLANTED}\n}\n`, 2],
  ['a byte-order mark before a top-level import', `\uFEFFimport ${PLANTED}\na.example.test {\n\trespond x\n}\n`, 1],
  ['snippet arguments assembling an import', `(s) {\n\t{args[0]} {args[1]}\n}\na.example.test {\n\timport s import ${PLANTED}\n}\n`, 2],
  [
    'client_auth reading a CA file while adapting',
    `a.example.test {\n\ttls {\n\t\tclient_auth {\n\t\t\ttrusted_ca_cert_file ${PLANTED}\n\t\t}\n\t}\n}\n`,
    4,
  ],
]

async function refusesEverySpelling(panel: PanelHandle, cookie: string) {
  const count = async () => Number((await panel.db().execute('SELECT count(*) AS n FROM hosts')).rows[0]!.n)
  const before = await count()
  for (const [name, caddyfile, line] of SPELLINGS) {
    const res = await panel.request('/api/import/caddyfile', { method: 'POST', cookie, body: { caddyfile, apply: true } })
    // The request itself throws when the answer carries the planted line (a registered secret).
    expect(res.text).not.toContain('second line')
    expect([name, res.status]).toEqual([name, 400])
    expect([name, res.json.error]).toEqual([name, expect.stringMatching(new RegExp(`^caddyfile: line ${line}: `))])
  }
  expect(await count()).toBe(before)
  const audit = JSON.stringify((await panel.db().execute("SELECT raw FROM logs WHERE source = 'audit'")).rows)
  expect(audit).not.toContain(PLANTED_LINE)
  expect(panel.output()).not.toContain(PLANTED_LINE)
}

describe('Caddyfile import — never reads a file', () => {
  it('refuses every spelling of a file read before caddy runs, naming the line; the file is in no answer, row or log (production Caddy)', async () => {
    await refusesEverySpelling(stack.panel, stack.admin)
  })

  it("the same with Debian's Caddy 2.6 as the adapter", async () => {
    const panel = await startPanel({ env: { PANEL_CADDY_BIN: STOCK_CADDY_BIN } })
    try {
      await refusesEverySpelling(panel, await panel.login())
      // The stock binary adapts what is allowed, with no PATH or environment of the panel.
      const ok = await panel.request('/api/import/caddyfile', {
        method: 'POST',
        cookie: await panel.login(),
        body: { caddyfile: '(common) {\n\tencode gzip\n}\nhttp://a.example.test {\n\timport common\n\trespond "ok"\n}\n' },
      })
      expect(ok.status).toBe(200)
      expect(ok.json.items.map((i: any) => i.name)).toContain('a.example.test')
    } finally {
      await panel.stop()
    }
  })

  it("an adapt error never carries caddy's text beyond the line: a word of the file is not echoed", async () => {
    const res = await post('a.example.test {\n\tWORD-ONLY-IN-THE-FILE on\n}\n')
    expect(res.status).toBe(400)
    expect(res.json.error).toBe('Caddyfile does not adapt: line 2: unrecognized directive')
  })
})

describe('Caddyfile import — without a caddy binary', () => {
  it('answers 503 naming PANEL_CADDY_BIN', async () => {
    const panel = await startPanel({ env: { PANEL_CADDY_BIN: '/nonexistent/caddy' } })
    try {
      const res = await panel.request('/api/import/caddyfile', {
        method: 'POST',
        cookie: await panel.login(),
        body: { caddyfile: 'a.example.test {\n\trespond "x"\n}\n' },
      })
      expect(res.status).toBe(503)
      expect(res.json.error).toBe(
        'caddy adapt unavailable: the caddy binary "/nonexistent/caddy" was not found: set PANEL_CADDY_BIN (docs/configuration.md)',
      )
    } finally {
      await panel.stop()
    }
  })
})
