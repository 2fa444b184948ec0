import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSecretsBox } from '../../server/utils/core/secrets'
import { DNS_PROVIDER_CATALOGUE } from '../../server/utils/hosts/dns-catalogue'
import { registerTestSecret, startPanel, TEST_MASTER_KEY, type PanelHandle } from '../support/panel'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

const MASTER_KEY = TEST_MASTER_KEY
// Formats the modules accept (cloudflare: 35-50 of A-Z a-z 0-9 _ -; AWS keys); the legacy token is imported as it is.
const SECRETS = [
  'tokA-SECRET-1111111111-aaaaaaaaaaaaaaaaaa',
  'tokA-SECRET-2222222222-bbbbbbbbbbbbbbbbbb',
  'SECRETBaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'legacy-SECRET-token-9999',
]
const AWS_KEY_ID_1 = 'AKIAIOSFODNN7EXAMPLE',
  AWS_KEY_ID_2 = 'AKIAI44QH8DHBEXAMPLE'
registerTestSecret(...SECRETS)
const responses: string[] = []

async function call(panel: PanelHandle, cookie: string, path: string, method = 'GET', body?: unknown) {
  const res = await panel.request(path, { method, cookie, body })
  responses.push(res.text)
  return res
}
async function storedCredentials(panel: PanelHandle, name: string) {
  const row = (await panel.db().execute({ sql: 'SELECT enabled, credentials FROM dns_providers WHERE name = ?', args: [name] })).rows[0]
  if (!row) return undefined
  const sealed = row.credentials === null ? null : String(row.credentials)
  return {
    enabled: Number(row.enabled) === 1,
    sealed,
    plain: sealed ? JSON.parse(createSecretsBox(MASTER_KEY).open(sealed, `dns_providers/${name}/credentials`)) : null,
  }
}

describe('DNS providers: catalogue and PUT rules', () => {
  let stack: ProxyStack
  // Debian's Caddy 2.6.2 without the DNS modules: the last test needs its refusal.
  beforeAll(async () => {
    stack = await startProxyStack({ stockCaddy: true })
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it('lists exactly the catalogue, unconfigured at first', async () => {
    const res = await call(stack.panel, stack.admin, '/api/dns-providers')
    // The spec's three first, then the vendor providers (issue 39), none configured.
    expect(res.json.map((p: any) => p.name)).toEqual(DNS_PROVIDER_CATALOGUE.map((p) => p.name))
    expect(res.json.slice(0, 3).map((p: any) => p.name)).toEqual(['provider_a', 'provider_b', 'provider_c'])
    expect(res.json.filter((p: any) => p.configured || p.enabled)).toEqual([])
    const [a, b, c] = res.json
    expect(a).toMatchObject({
      enabled: false,
      configured: false,
      proxy_module: 'dns.providers.cloudflare',
      docs_url: expect.stringMatching(/^https:\/\//),
    })
    // Every provider but acme-dns ends with the optional delegation zone (docs/tls.md, "Challenge delegation").
    expect(a.fields).toEqual([
      expect.objectContaining({ key: 'api_token', required: true, secret: true }),
      expect.objectContaining({ key: 'challenge_delegation', required: false }),
      expect.objectContaining({ key: 'propagation_timeout', required: false }),
      expect.objectContaining({ key: 'propagation_resolvers', required: false }),
    ])
    expect(b.proxy_module).toBe('dns.providers.route53')
    expect(b.fields.map((f: any) => [f.key, f.required, !!f.secret])).toEqual([
      ['access_key_id', true, false],
      ['secret_access_key', true, true],
      ['region', false, false],
      ['challenge_delegation', false, false],
      ['propagation_timeout', false, false],
      ['propagation_resolvers', false, false],
    ])
    expect(c).toMatchObject({ enabled: false, configured: false, proxy_module: 'dns.providers.rfc2136' })
    expect(c.fields.map((f: any) => [f.key, f.required, !!f.secret])).toEqual([
      ['server', true, false],
      ['key_name', true, false],
      ['key_alg', true, false],
      ['key', true, true],
      ['zone', false, false],
      ['challenge_delegation', false, false],
      ['propagation_timeout', false, false],
      ['propagation_resolvers', false, false],
    ])
    expect(c.fields.find((f: any) => f.key === 'key_alg').options).toEqual([
      'hmac-sha256',
      'hmac-sha384',
      'hmac-sha512',
      'hmac-sha224',
      'hmac-sha1',
    ])
    expect((await call(stack.panel, stack.admin, '/api/dns-providers/provider_b')).json.name).toBe('provider_b')
    // A well-formed name outside the catalogue names no row: a 404 naming the choices (docs/api.md).
    expect((await call(stack.panel, stack.admin, '/api/dns-providers/provider_z')).status).toBe(404)
    const put = await call(stack.panel, stack.admin, '/api/dns-providers/provider_z', 'PUT', { enabled: true })
    expect([put.status, put.json.error]).toEqual([404, expect.stringMatching(/not in the catalogue; use provider_a/)])
  })

  it('stores credentials sealed, never returns them, disables without losing them, and honours __UNCHANGED__', async () => {
    const put = await call(stack.panel, stack.admin, '/api/dns-providers/provider_a', 'PUT', {
      enabled: true,
      credentials: { api_token: SECRETS[0] },
    })
    expect(put.status).toBe(200)
    expect(put.json).toMatchObject({ name: 'provider_a', enabled: true, configured: true })
    expect((await storedCredentials(stack.panel, 'provider_a'))?.plain).toEqual({ api_token: SECRETS[0] })
    expect((await storedCredentials(stack.panel, 'provider_a'))?.sealed).not.toContain(SECRETS[0])

    const before = (await storedCredentials(stack.panel, 'provider_a'))!.sealed
    const off = await call(stack.panel, stack.admin, '/api/dns-providers/provider_a', 'PUT', { enabled: false })
    expect(off.json).toMatchObject({ enabled: false, configured: true })
    expect((await storedCredentials(stack.panel, 'provider_a'))!.sealed).toBe(before)
    expect((await call(stack.panel, stack.admin, '/api/dns-providers/provider_a', 'PUT', { enabled: true })).json.enabled).toBe(true)

    await call(stack.panel, stack.admin, '/api/dns-providers/provider_b', 'PUT', {
      enabled: true,
      credentials: { access_key_id: AWS_KEY_ID_1, secret_access_key: SECRETS[2], region: 'eu-west-1' },
    })
    await call(stack.panel, stack.admin, '/api/dns-providers/provider_b', 'PUT', {
      enabled: true,
      credentials: { access_key_id: AWS_KEY_ID_2, secret_access_key: '__UNCHANGED__' },
    })
    expect((await storedCredentials(stack.panel, 'provider_b'))?.plain).toEqual({
      access_key_id: AWS_KEY_ID_2,
      secret_access_key: SECRETS[2],
    })
    const audit = await stack.panel.db().execute("SELECT raw FROM logs WHERE message = 'dns_provider_update'")
    expect(audit.rows.length).toBe(5)
  })

  it.each([
    ['enabled missing', { credentials: { api_token: 'x' } }, /enabled/],
    ['enabled not boolean', { enabled: 'yes' }, /enabled/],
    ['unknown credential key', { enabled: true, credentials: { api_token: 'x', zone: 'y' } }, /credentials.zone: unknown field/],
    ['missing required field', { enabled: true, credentials: {} }, /credentials.api_token: is required/],
    ['non-string value', { enabled: true, credentials: { api_token: 42 } }, /must be a string/],
    ['credentials over 4 KiB', { enabled: true, credentials: { api_token: 'x'.repeat(5000) } }, /4096 bytes/],
    ['unknown top-level field', { enabled: true, token: 'x' }, /unknown field "token"/],
  ])('%s: 400 and nothing stored', async (_name, body, message) => {
    const before = await storedCredentials(stack.panel, 'provider_a')
    const res = await call(stack.panel, stack.admin, '/api/dns-providers/provider_a', 'PUT', body)
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
    expect(await storedCredentials(stack.panel, 'provider_a')).toEqual(before)
  })

  it('a host can use a configured provider for DNS-01; PROXY_MODULES without dns leaves it out with a warning', async () => {
    const group = await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })
    const host = await createHost(stack, {
      domain: '*.dns.example.test',
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_a',
    })
    expect(host.status).toBe(201)
    expect(host.json.reconcile.warnings.join()).toMatch(/PROXY_MODULES lacks dns/)
    await call(stack.panel, stack.admin, '/api/dns-providers/provider_b', 'PUT', { enabled: false })
    const refused = await createHost(stack, {
      domain: 'b.dns.example.test',
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_b',
    })
    expect(refused.status).toBe(400)
    expect(refused.json.error).toMatch(/provider_b is disabled/)
  })

  it("the proxy rejects DNS-01 without its module: the credential rotation is rolled back with Caddy's text", async () => {
    // Same database, now told the proxy has DNS modules: the stock Caddy does not.
    await stack.panel.stop()
    const panel = await startPanel({
      dataDir: stack.panel.dataDir,
      env: {
        PROXY_ADMIN_URL: stack.caddy.adminUrl,
        PROXY_MODULES: 'dns',
        PROXY_HTTP_LISTEN: `127.0.0.1:${stack.httpPort}`,
        PROXY_HTTPS_LISTEN: `127.0.0.1:${stack.httpsPort}`,
        PROXY_LOG_DIR: stack.logDir,
      },
    })
    try {
      const cookie = await panel.login()
      const before = (await storedCredentials(panel, 'provider_a'))!.sealed
      const res = await call(panel, cookie, '/api/dns-providers/provider_a', 'PUT', {
        enabled: true,
        credentials: { api_token: SECRETS[1] },
      })
      expect(res.status).toBe(502)
      expect(res.json.error).toMatch(/^proxy rejected configuration: .*unknown module: dns\.providers\.cloudflare/)
      expect((await storedCredentials(panel, 'provider_a'))!.sealed).toBe(before)
      expect(panel.output()).not.toContain(SECRETS[1])
      responses.push(panel.output())
    } finally {
      await panel.stop()
    }
  })
})

describe('legacy PROVIDER_A_API_TOKEN import', () => {
  it('stores the token once, logs once, and is idempotent across restarts', async () => {
    const env = { PROVIDER_A_API_TOKEN: SECRETS[3] }
    const first = await startPanel({ env })
    let second: PanelHandle | undefined
    try {
      const cookie = await first.login()
      expect((await call(first, cookie, '/api/dns-providers/provider_a')).json).toMatchObject({ enabled: true, configured: true })
      expect((await storedCredentials(first, 'provider_a'))?.plain).toEqual({ api_token: SECRETS[3] })
      await first.stop()
      second = await startPanel({ env, dataDir: first.dataDir })
      expect((await second.db().execute("SELECT count(*) AS n FROM dns_providers WHERE name = 'provider_a'")).rows[0]!.n).toBe(1)
      const lines = (first.output() + second.output()).split('\n').filter((l) => l.includes('imported PROVIDER_A_API_TOKEN'))
      expect(lines).toHaveLength(1)
      expect(first.output() + second.output()).not.toContain(SECRETS[3])
      responses.push(first.output(), second.output())
    } finally {
      await first.stop()
      await second?.stop()
    }
  })
})

describe('no secret in any response of this file', () => {
  it('none of the credential values appears in a response body or the panel output', () => {
    expect(responses.length).toBeGreaterThan(10)
    for (const text of responses) for (const secret of SECRETS) expect(text).not.toContain(secret)
  })
})
