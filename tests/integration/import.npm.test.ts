import { readFileSync, writeFileSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestPki } from '../support/certs'
import { httpRequest, presentedCertificate } from '../support/http'
import { buildNpmDatabase } from '../support/npm-db'
import { registerTestSecret } from '../support/panel'
import { freePorts } from '../support/ports'
import { makeTempDir } from '../support/processes'
import { startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { startTestUpstream } from '../support/upstream'

// nginx-proxy-manager import: a database with its migrations' schema
// (tests/support/npm-db.ts), uploaded to the panel, served by the production Caddy.
const STAFF_PASSWORD = 'npm-staff-password-1'
const DNS_TOKEN = 'dns_cloudflare_api_token = npm-secret-cf-token-123'
// The panel's own Hetzner token (configured before the import: NPM's is never read).
const HETZNER_TOKEN = 'SECRETpanelHetzner0123456789abcd'

let stack: ProxyStack
let upA: Awaited<ReturnType<typeof startTestUpstream>>
let upB: Awaited<ReturnType<typeof startTestUpstream>>
let dbFile: string
let customKeyPem: string
let rootPem: string
// The imported TCP stream's upstream (an echo server) and the two ports the file's enabled streams listen on.
let echo: Server
let echoPort: number
let P1: number
let P4: number

const upload = (bytes: Buffer, apply = false) => {
  const form = new FormData()
  form.set('database', new Blob([new Uint8Array(bytes)]), 'database.sqlite')
  form.set('apply', String(apply))
  return stack.panel.request('/api/import/npm', { method: 'POST', cookie: stack.admin, form })
}
const through = (host: string, path = '/', headers: Record<string, string> = {}) =>
  httpRequest({ port: stack.httpPort, host, path, headers })
const countRows = async (table: string) => Number((await stack.panel.db().execute(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n)
const made = (r: any, kind: string) =>
  r.items
    .filter((i: any) => i.kind === kind && i.outcome === 'create')
    .map((i: any) => `${i.source}: ${i.name}`)
    .sort()
const live = { is_deleted: 0, owner_user_id: 1, meta: {} }

beforeAll(async () => {
  upA = await startTestUpstream()
  upB = await startTestUpstream()
  const pki = createTestPki()
  rootPem = pki.rootPem
  const custom = pki.leaf('custom.example.test')
  customKeyPem = custom.keyPem
  registerTestSecret(STAFF_PASSWORD, 'npm-secret-cf-token-123', customKeyPem, HETZNER_TOKEN, 'npm-secret-hz-token-456')
  // First: a stream of the file sits on the proxy's HTTP port, which the stack picks.
  stack = await startProxyStack()
  echo = createServer((socket) => socket.pipe(socket))
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
  echoPort = (echo.address() as { port: number }).port
  ;[P1, P4] = await freePorts(2)
  dbFile = await buildNpmDatabase({
    user: [{ is_deleted: 0, email: 'admin@example.test', name: 'Admin', nickname: 'admin', avatar: '', roles: ['admin'] }],
    certificate: [
      {
        ...live,
        provider: 'letsencrypt',
        nice_name: 'le',
        domain_names: ['le.example.test'],
        expires_on: '2027-01-01 00:00:00',
        meta: { letsencrypt_email: 'ops@example.test', letsencrypt_agree: true, dns_challenge: false },
      },
      {
        ...live,
        provider: 'other',
        nice_name: 'Custom cert',
        domain_names: ['custom.example.test'],
        expires_on: '2027-01-01 00:00:00',
        meta: { certificate: custom.certPem, certificate_key: custom.keyPem },
      },
      {
        ...live,
        provider: 'letsencrypt',
        nice_name: 'dns',
        domain_names: ['dns.example.test'],
        expires_on: '2027-01-01 00:00:00',
        meta: {
          letsencrypt_email: 'ops@example.test',
          dns_challenge: true,
          dns_provider: 'cloudflare',
          dns_provider_credentials: DNS_TOKEN,
        },
      },
      // NPM ids of providers the panel has: hetzner configured here before the import, ovh not offered.
      {
        ...live,
        provider: 'letsencrypt',
        nice_name: 'hz',
        domain_names: ['hz.example.test'],
        expires_on: '2027-01-01 00:00:00',
        meta: {
          letsencrypt_email: 'ops@example.test',
          dns_challenge: true,
          dns_provider: 'hetzner',
          dns_provider_credentials: 'dns_hetzner_api_token = npm-secret-hz-token-456',
        },
      },
      {
        ...live,
        provider: 'letsencrypt',
        nice_name: 'ovh',
        domain_names: ['ovh.example.test'],
        expires_on: '2027-01-01 00:00:00',
        meta: { letsencrypt_email: 'ops@example.test', dns_challenge: true, dns_provider: 'ovh' },
      },
    ],
    access_list: [
      { ...live, name: 'Staff', satisfy_any: 0, pass_auth: 1 },
      { ...live, name: 'Unused', satisfy_any: 1, pass_auth: 0 },
    ],
    access_list_auth: [
      { access_list_id: 1, username: 'ann', password: STAFF_PASSWORD, meta: {} },
      { access_list_id: 2, username: 'bob', password: STAFF_PASSWORD, meta: {} },
    ],
    access_list_client: [
      { access_list_id: 1, address: '127.0.0.1', directive: 'allow', meta: {} },
      { access_list_id: 1, address: '198.51.100.0/24', directive: 'deny', meta: {} },
      { access_list_id: 2, address: 'all', directive: 'allow', meta: {} },
      { access_list_id: 2, address: 'not-an-address', directive: 'deny', meta: {} },
    ],
    proxy_host: [
      {
        ...live,
        domain_names: ['app.example.test', 'www.app.example.test'],
        forward_scheme: 'http',
        forward_host: '127.0.0.1',
        forward_port: upA.port,
        access_list_id: 1,
        locations: [
          { path: '/api', forward_scheme: 'http', forward_host: '127.0.0.1', forward_port: upB.port },
          { path: '~ ^/regex', forward_scheme: 'http', forward_host: '127.0.0.1', forward_port: upB.port },
        ],
        allow_websocket_upgrade: 1,
      },
      {
        ...live,
        domain_names: ['le.example.test'],
        forward_host: '127.0.0.1',
        forward_port: upA.port,
        certificate_id: 1,
        ssl_forced: 1,
        hsts_enabled: 1,
        hsts_subdomains: 1,
      },
      {
        ...live,
        domain_names: ['custom.example.test'],
        forward_host: '127.0.0.1',
        forward_port: upA.port,
        certificate_id: 2,
        hsts_enabled: 1,
      },
      {
        ...live,
        domain_names: ['dns.example.test'],
        forward_host: '127.0.0.1',
        forward_port: upA.port,
        certificate_id: 3,
        block_exploits: 1,
        advanced_config: 'client_max_body_size 0;',
      },
      { ...live, is_deleted: 1, domain_names: ['deleted.example.test'], forward_host: '127.0.0.1', forward_port: upA.port },
      { ...live, domain_names: ['*.wild.example.test'], forward_host: '127.0.0.1', forward_port: upA.port },
      { ...live, domain_names: ['hz.example.test'], forward_host: '127.0.0.1', forward_port: upA.port, certificate_id: 4 },
      { ...live, domain_names: ['ovh.example.test'], forward_host: '127.0.0.1', forward_port: upA.port, certificate_id: 5 },
    ],
    redirection_host: [
      {
        ...live,
        domain_names: ['old.example.test'],
        forward_domain_name: 'new.example.test',
        forward_scheme: 'auto',
        forward_http_code: 301,
        preserve_path: 1,
      },
    ],
    dead_host: [{ ...live, domain_names: ['gone.example.test'] }],
    stream: [
      { ...live, incoming_port: P1, forwarding_host: '127.0.0.1', forwarding_port: echoPort, tcp_forwarding: 1 },
      // Both protocols: two streams to one group; disabled stays disabled.
      {
        ...live,
        incoming_port: 5353,
        forwarding_host: 'dns.internal',
        forwarding_port: 53,
        tcp_forwarding: 1,
        udp_forwarding: 1,
        enabled: 0,
      },
      { ...live, incoming_port: 2223, forwarding_host: '10.0.0.9', forwarding_port: 22 },
      { ...live, incoming_port: P4, forwarding_host: '10.0.0.7', forwarding_port: 1883, tcp_forwarding: 1, certificate_id: 1 },
      { ...live, incoming_port: stack.httpPort, forwarding_host: '10.0.0.9', forwarding_port: 80, tcp_forwarding: 1 },
      { ...live, is_deleted: 1, incoming_port: 2224, forwarding_host: '10.0.0.9', forwarding_port: 22, tcp_forwarding: 1 },
    ],
    setting: [{ id: 'default-site', name: 'Default Site', description: '', value: 'congratulations', meta: {} }],
  })
  const hetzner = await stack.panel.request('/api/dns-providers/hetzner', {
    method: 'PUT',
    cookie: stack.admin,
    body: { enabled: true, credentials: { auth_api_token: HETZNER_TOKEN } },
  })
  expect(hetzner.status).toBe(200)
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
  await new Promise((resolve) => echo?.close(resolve))
})

describe('nginx-proxy-manager import', () => {
  it('the dry run says what it would create, what maps imperfectly and why, and what cannot be imported; it writes nothing', async () => {
    const res = await upload(readFileSync(dbFile))
    expect(res.status).toBe(200)
    const r = res.json
    expect(r.applied).toBe(false)
    expect(made(r, 'host')).toEqual([
      'dead_host 1: gone.example.test',
      'proxy_host 1: app.example.test',
      'proxy_host 2: le.example.test',
      'proxy_host 3: custom.example.test',
      'proxy_host 4: dns.example.test',
      'proxy_host 7: hz.example.test',
      'proxy_host 8: ovh.example.test',
      'redirection_host 1: old.example.test',
    ])
    // Redirection and 404 hosts are hosts of their own kind: no rule, no placeholder group.
    expect(made(r, 'rule')).toEqual(['proxy_host 1 location 1: app.example.test /api* (proxy)'])
    expect(made(r, 'target_group').some((g: string) => g.includes('no upstream'))).toBe(false)
    // A list no host uses is imported too.
    expect(made(r, 'access_list')).toEqual(['access_list 1: Staff', 'access_list 2: Unused'])
    expect(made(r, 'certificate')).toEqual(['certificate 2: Custom cert for custom.example.test'])
    // One stream per protocol forwarded, each to a group of its upstream; the deleted one is not read.
    expect(made(r, 'stream')).toEqual([
      `stream 1: stream ${P1}/tcp`,
      'stream 2: stream 5353/tcp',
      'stream 2: stream 5353/udp',
      `stream 4: stream ${P4}/tcp`,
    ])
    expect(made(r, 'target_group')).toEqual(
      expect.arrayContaining([`stream 1: stream ${P1}`, 'stream 2: stream 5353', `stream 4: stream ${P4}`]),
    )
    // The group of a stream that is not imported is not made either.
    expect(made(r, 'target_group').filter((g: string) => g.startsWith('stream 5:') || g.startsWith('stream 3:'))).toEqual([])
    const why = (list: any[]) => list.map((n: any) => `${n.source}: ${n.why}`)
    expect(why(r.imperfect)).toContain(
      `stream 4: stream ${P4}/tcp: nginx-proxy-manager ended TLS with its certificate 1; the stream passes the bytes through untouched, so the upstream must speak TLS itself`,
    )
    const streamNotes = r.not_importable.filter((n: any) => n.kind === 'stream')
    expect(streamNotes.map((n: any) => [n.source, n.name])).toEqual([
      ['stream 3', 'port 2223 to 10.0.0.9:22'],
      ['stream 5', `stream ${stack.httpPort}/tcp`],
    ])
    expect(streamNotes[0].why).toBe('it forwards neither TCP nor UDP (both switched off in nginx-proxy-manager)')
    // The port conflict is the API's 409 text: it names who holds the port.
    expect(streamNotes[1].why).toMatch(new RegExp(`${stack.httpPort}.*HTTP`, 'i'))
    expect(why(r.imperfect)).toEqual(
      expect.arrayContaining([
        "proxy_host 4: dns.example.test: its Let's Encrypt certificate used a DNS challenge (cloudflare); the host uses HTTP-01 until Cloudflare is configured: its credentials cannot be imported, so enter them under DNS providers (provider_a), then switch the host to DNS-01",
        "proxy_host 8: ovh.example.test: its Let's Encrypt certificate used a DNS challenge (ovh), which none of the panel's DNS providers offers; the host uses HTTP-01",
        'proxy_host 4: dns.example.test: its custom nginx configuration is not carried over',
        'proxy_host 4: dns.example.test: "block common exploits" is not carried over; enable the host\'s WAF instead',
      ]),
    )
    // The request's scheme and path are kept, as nginx-proxy-manager did.
    expect(why(r.imperfect).filter((w: string) => w.startsWith('redirection_host'))).toEqual([])
    expect(why(r.not_importable)).toEqual(
      expect.arrayContaining([
        'proxy_host 6: *.wild.example.test is a wildcard: its certificate needs a DNS provider; create this host by hand with tls_challenge "dns"',
        'proxy_host 1 location 2: only prefix locations (/path) map to rules; regular-expression locations do not',
        'access_list 2: Unused: not an IP address or CIDR range',
      ]),
    )
    expect(why(r.imperfect)).toEqual(
      expect.arrayContaining([
        'access_list 2: Unused: "satisfy any" (an allowed address OR a password) has no equivalent: the panel asks both',
        'access_list 2: Unused: the upstream now receives the Authorization header (nginx-proxy-manager removed it)',
      ]),
    )
    // A provider configured here keeps DNS-01 (and is not reported as imperfect).
    expect(why(r.imperfect).some((w: string) => w.startsWith('proxy_host 7'))).toBe(false)
    expect(res.text).not.toContain('deleted.example.test')
    expect(await countRows('hosts')).toBe(0)
  })

  it('apply creates hosts, groups, rules, the access list and the custom certificate in one transaction and one reconcile', async () => {
    const pushes = await countRows("logs WHERE source = 'audit' AND message = 'proxy_reconcile'")
    const res = await upload(readFileSync(dbFile), true)
    expect(res.status).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    expect(await countRows('hosts')).toBe(8)
    expect(await countRows("logs WHERE source = 'audit' AND message = 'proxy_reconcile'")).toBe(pushes + 1)
    const audit = (await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'import_apply'")).rows
    expect(JSON.parse(String(audit[0]!.raw))).toMatchObject({
      source: 'nginx-proxy-manager',
      hosts: 8,
      access_lists: 2,
      certificates: 1,
      rules: 1,
      streams: 4,
    })
    const streams = (await stack.panel.request('/api/streams', { cookie: stack.admin })).json
    const stream = (n: string) => streams.find((x: any) => x.name === n)
    expect(streams.map((x: any) => x.name).sort()).toEqual(
      [`stream ${P1}/tcp`, 'stream 5353/tcp', 'stream 5353/udp', `stream ${P4}/tcp`].sort(),
    )
    const groups = (await stack.panel.request('/api/target-groups', { cookie: stack.admin })).json
    const group = (id: number) => groups.find((g: any) => g.id === id)
    expect(stream(`stream ${P1}/tcp`)).toMatchObject({ protocol: 'tcp', listen_port: P1, listen_port_end: null, enabled: true })
    expect(group(stream(`stream ${P1}/tcp`).target_group_id).targets).toEqual([{ address: `127.0.0.1:${echoPort}`, weight: 1 }])
    expect(stream('stream 5353/udp')).toMatchObject({ protocol: 'udp', listen_port: 5353, enabled: false })
    expect(stream('stream 5353/tcp')).toMatchObject({ enabled: false, target_group_id: stream('stream 5353/udp').target_group_id })
    expect(group(stream('stream 5353/udp').target_group_id).targets).toEqual([{ address: 'dns.internal:53', weight: 1 }])
    for (const item of res.json.items.filter((i: any) => i.kind === 'stream')) expect(item.id).toBe(stream(item.name).id)

    const hosts = (await stack.panel.request('/api/hosts', { cookie: stack.admin })).json
    const host = (d: string) => hosts.find((h: any) => h.domain === d)
    expect(host('app.example.test')).toMatchObject({ tls_mode: 'none', aliases: ['www.app.example.test'] })
    expect(host('le.example.test')).toMatchObject({ tls_mode: 'auto', tls_email: 'ops@example.test' })
    expect(host('custom.example.test')).toMatchObject({ tls_mode: 'manual' })
    // DNS-01 kept where the panel has the provider configured; HTTP-01 where it has not, or has no such provider.
    expect(host('hz.example.test')).toMatchObject({ tls_mode: 'auto', tls_challenge: 'dns', tls_dns_provider: 'hetzner' })
    expect(host('dns.example.test')).toMatchObject({ tls_mode: 'auto', tls_challenge: 'http', tls_dns_provider: null })
    expect(host('ovh.example.test')).toMatchObject({ tls_mode: 'auto', tls_challenge: 'http', tls_dns_provider: null })
    // HSTS switches: nginx-proxy-manager's two years; preload only where subdomains are included.
    expect(host('le.example.test').hsts).toEqual({ max_age: 63_072_000, include_subdomains: true, preload: true })
    expect(host('custom.example.test').hsts).toEqual({ max_age: 63_072_000, include_subdomains: false, preload: false })
    expect(host('app.example.test').hsts).toBeNull()
    expect(host('old.example.test')).toMatchObject({
      kind: 'redirect',
      target_group_id: null,
      redirect_to: 'new.example.test',
      redirect_status: 301,
      redirect_keep_path: true,
    })
    expect(host('gone.example.test')).toMatchObject({ kind: 'static', target_group_id: null, static_status: 404 })
    // The report said which TLS each host gets (an uploaded certificate for the custom one) and names its id.
    for (const item of res.json.items.filter((i: any) => i.kind === 'host')) {
      expect(item.id).toBe(host(item.name).id)
      expect(item.tls.mode).toBe(host(item.name).tls_mode)
    }
    expect(res.json.items.find((i: any) => i.name === 'custom.example.test' && i.kind === 'host').tls.text).toBe(
      'Uploaded certificate (the one from the source)',
    )
    const cert = await stack.panel.request(`/api/manual-certs/${host('custom.example.test').id}`, { cookie: stack.admin })
    expect(cert.json).toMatchObject({ domain: 'custom.example.test', sans: ['custom.example.test'] })
    const [list, unused] = (await stack.panel.request('/api/access-lists', { cookie: stack.admin })).json
    expect(unused).toMatchObject({
      name: 'Unused',
      default_action: 'deny',
      ip_rules: [
        { action: 'allow', source: '0.0.0.0/0' },
        { action: 'allow', source: '::/0' },
      ],
      users: [{ username: 'bob' }],
      host_ids: [],
    })
    expect(list).toMatchObject({
      name: 'Staff',
      default_action: 'deny',
      ip_rules: [
        { action: 'allow', source: '127.0.0.1' },
        { action: 'deny', source: '198.51.100.0/24' },
      ],
      users: [{ username: 'ann' }],
      host_ids: [host('app.example.test').id],
    })
  })

  it('the production Caddy serves what was imported: access list, location, redirect, 404 host, TCP stream', async () => {
    expect((await through('app.example.test')).status).toBe(401)
    const auth = { authorization: `Basic ${Buffer.from(`ann:${STAFF_PASSWORD}`).toString('base64')}` }
    expect((await through('app.example.test', '/home', auth)).status).toBe(200)
    expect(upA.requests.at(-1)!.url).toBe('/home')
    expect((await through('app.example.test', '/api/v1', auth)).status).toBe(200)
    expect(upB.requests.at(-1)!.url).toBe('/api/v1')
    const redirect = await through('old.example.test', '/x?y=1')
    expect([redirect.status, redirect.headers.location]).toEqual([301, 'http://new.example.test/x?y=1'])
    const gone = await through('gone.example.test', '/anything')
    expect([gone.status, gone.body]).toEqual([404, 'Not Found\n'])
    // The custom certificate is the one the proxy presents for its host.
    const presented = await presentedCertificate(stack.httpsPort, 'custom.example.test', rootPem)
    expect(presented?.subject).toContain('custom.example.test')
    expect(presented?.issuer).toContain('Panel Test Intermediate')
    // The imported TCP stream forwards bytes to its upstream.
    const back = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: P1 }, () => socket.end('through the imported stream'))
      let got = ''
      socket.on('data', (d) => {
        got += d
      })
      socket.on('end', () => resolve(got))
      socket.on('error', reject)
    })
    expect(back).toBe('through the imported stream')
  })

  it('re-importing the same file creates nothing', async () => {
    const tables = ['hosts', 'target_groups', 'rules', 'access_lists', 'manual_certs', 'streams']
    const counts = await Promise.all(tables.map(countRows))
    const res = await upload(readFileSync(dbFile), true)
    expect(res.status).toBe(200)
    expect(res.json.items.filter((i: any) => i.outcome === 'create')).toEqual([])
    expect(res.json.items.filter((i: any) => i.kind === 'stream' && i.outcome === 'exists')).toHaveLength(4)
    expect(res.json.reconcile).toBeUndefined()
    expect(await Promise.all(tables.map(countRows))).toEqual(counts)
  })

  it('no password, DNS credential or private key of the file is in an audit row or the panel output', async () => {
    const rows = JSON.stringify((await stack.panel.db().execute("SELECT raw FROM logs WHERE source = 'audit'")).rows)
    for (const secret of [STAFF_PASSWORD, 'npm-secret-cf-token-123', customKeyPem.split('\n')[1]!]) {
      expect(rows).not.toContain(secret)
      expect(stack.panel.output()).not.toContain(secret)
    }
  })

  it('a malformed file is a 400 that changes nothing', async () => {
    const counts = await Promise.all(['hosts', 'target_groups'].map(countRows))
    const other = join(makeTempDir('not-npm-'), 'x.sqlite')
    await buildOtherSqlite(other)
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from('this is not a database'), /^database: not an SQLite database file/],
      [readFileSync(other), /^database: not an nginx-proxy-manager database \(2\.9 or later\): table proxy_host, /],
      [readFileSync(dbFile).subarray(0, 8192), /^database: cannot be read as an nginx-proxy-manager database/],
      [Buffer.alloc(0), /^database: the file is empty/],
    ]
    for (const [bytes, message] of cases) {
      const res = await upload(bytes, true)
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(message)
    }
    const noPart = await stack.panel.request('/api/import/npm', { method: 'POST', cookie: stack.admin, form: new FormData() })
    expect(noPart.status).toBe(400)
    expect(await Promise.all(['hosts', 'target_groups'].map(countRows))).toEqual(counts)
  })
})

describe('nginx-proxy-manager import — a file that is not its database is refused before a row is read', () => {
  const host = (n: number) => ({ ...live, domain_names: [`h${n}.example.test`], forward_host: '127.0.0.1', forward_port: 1 })
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${stack.panel.pid}/status`, 'utf8'))![1])

  it("a generated column that allocates 50 MB a read is a 400, and the panel's peak memory stays within 64 MiB of idle", async () => {
    const bomb = await buildNpmDatabase({ proxy_host: [1, 2, 3, 4].map(host) }, [
      "ALTER TABLE proxy_host ADD COLUMN bomb TEXT GENERATED ALWAYS AS (printf('%.*c', 50000000, 'x')) VIRTUAL",
    ])
    const counts = await Promise.all(['hosts', 'target_groups'].map(countRows))
    // Resets the process's peak resident size (VmHWM) to what it holds now.
    writeFileSync(`/proc/${stack.panel.pid}/clear_refs`, '5')
    const idle = kib('VmRSS')
    const res = await upload(readFileSync(bomb), true)
    expect(kib('VmHWM') - idle).toBeLessThan(64 * 1024)
    expect(res.status).toBe(400)
    expect(res.json.error).toBe(
      'database: not an nginx-proxy-manager database: the column proxy_host.bomb is generated or hidden; nginx-proxy-manager has none',
    )
    expect(await Promise.all(['hosts', 'target_groups'].map(countRows))).toEqual(counts)
  })

  it('views, triggers, tables it does not have and tables over the row cap are 400s naming them', async () => {
    const counts = await Promise.all(['hosts', 'target_groups'].map(countRows))
    const cases: Array<[string[], string]> = [
      [
        ['CREATE VIEW proxy_view AS SELECT * FROM proxy_host'],
        'database: not an nginx-proxy-manager database: it holds the view "proxy_view"; nginx-proxy-manager creates none',
      ],
      [
        ['CREATE TRIGGER on_setting AFTER UPDATE ON setting BEGIN SELECT 1; END'],
        'database: not an nginx-proxy-manager database: it holds the trigger "on_setting"; nginx-proxy-manager creates none',
      ],
      [
        ['CREATE TABLE extra (x text)'],
        'database: not an nginx-proxy-manager database: the table "extra" is not one of nginx-proxy-manager\'s',
      ],
      [
        [
          "INSERT INTO stream (created_on, modified_on, owner_user_id, incoming_port, forwarding_host, forwarding_port, meta) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10001) SELECT '2026-01-01', '2026-01-01', 1, x, 'h', 1, '{}' FROM c",
        ],
        'database: the table stream has 10001 rows (deleted ones included); an import reads at most 10000',
      ],
    ]
    for (const [sql, error] of cases) {
      const res = await upload(readFileSync(await buildNpmDatabase({ proxy_host: [host(1)] }, sql)), true)
      expect([res.status, res.json.error]).toEqual([400, error])
    }
    expect(await Promise.all(['hosts', 'target_groups'].map(countRows))).toEqual(counts)
  })
})

async function buildOtherSqlite(path: string) {
  const { createClient } = await import('@libsql/client')
  const c = createClient({ url: `file:${path}` })
  await c.execute('CREATE TABLE notes (id integer primary key, body text)')
  c.close()
  writeFileSync(`${path}.done`, '')
}
