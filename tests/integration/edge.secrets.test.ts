import { createServer, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSecretsBox } from '../../server/utils/core/secrets'
import { generateTsigKey } from '../support/bind'
import { eventually } from '../support/http'
import { ADMIN, registerTestSecret, TEST_MASTER_KEY, type PanelHandle } from '../support/panel'
import { freePort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// DNS credentials at the production proxy: a value its module would refuse is
// refused at save (400 naming the rule, never the value), and proxy text that
// quotes a credential is redacted before any response, log line or audit row.
// The harness fails any request whose answer, and any panel whose output,
// contains a registered secret; the audit rows are read here.

// Shaped like real credentials (AWS's documentation examples), none of them real.
const CF_TOKEN = 'SECRETcf0123456789abcdefghij_-ABCDEFGHIJ'
const CF_TOKEN_2 = `cfut_SECRET${'q'.repeat(40)}`
const AWS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE'
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY'
const REFUSED = [
  '"SECRET-quoted-0123456789-abcdefghijklm"',
  'SECRET-short-9999',
  '{env.SECRET_CF_TOKEN_0123456789_ABCDEF}',
  'SECRET with spaces 0123456789 abcdefghij',
]
// Imported from the environment without the save-time check: the module refuses it, quoting it.
const LEGACY_TOKEN = 'SECRET-legacy-token-too-short'
// A TSIG secret as tsig-keygen prints it, and one with a character base64 lacks.
const TSIG_SECRET = 'SECRETtsig5YuwiOJmNxKLgeqxYLbfFVHOBdYjroWu4='
const TSIG_NOT_BASE64 = 'SECRET!tsig5YuwiOJmNxKLgeqxYLbfFVHOBdYjroWu='
registerTestSecret(CF_TOKEN, CF_TOKEN_2, AWS_SECRET, LEGACY_TOKEN, TSIG_SECRET, TSIG_NOT_BASE64, ...REFUSED)

async function stored(panel: PanelHandle, name: string) {
  const row = (await panel.db().execute({ sql: 'SELECT enabled, credentials FROM dns_providers WHERE name = ?', args: [name] })).rows[0]
  if (!row?.credentials) return row ? { enabled: Number(row.enabled) === 1, plain: null } : undefined
  return {
    enabled: Number(row.enabled) === 1,
    plain: JSON.parse(createSecretsBox(TEST_MASTER_KEY).open(String(row.credentials), `dns_providers/${name}/credentials`)),
  }
}

async function everyLogRow(panel: PanelHandle): Promise<string> {
  return (await panel.db().execute('SELECT message, raw FROM logs')).rows.map((r) => `${r.message} ${r.raw}`).join('\n')
}

describe('DNS credentials the proxy module would refuse are refused at save', () => {
  let stack: ProxyStack
  beforeAll(async () => {
    stack = await startProxyStack()
  })
  afterAll(async () => {
    await stack?.stop()
  })
  const put = (name: string, body: unknown) =>
    stack.panel.request(`/api/dns-providers/${name}`, { method: 'PUT', cookie: stack.admin, body })

  it.each(REFUSED)('Cloudflare token %#: 400 naming the rule, nothing stored', async (token) => {
    const res = await put('provider_a', { enabled: true, credentials: { api_token: token } })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(
      /^credentials\.api_token: must be a Cloudflare API token as the proxy's cloudflare module accepts it: 35 to 50 characters/,
    )
    expect(await stored(stack.panel, 'provider_a')).toBeUndefined()
  })

  it.each([
    [{ access_key_id: 'AKIA1', secret_access_key: AWS_SECRET }, /^credentials\.access_key_id: must be an AWS access key ID/],
    [
      { access_key_id: AWS_KEY_ID, secret_access_key: `${AWS_SECRET} x` },
      /^credentials\.secret_access_key: must be an AWS secret access key/,
    ],
    [
      { access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET, region: 'eu-paris' },
      /^credentials\.region: must be an AWS region such as us-east-1/,
    ],
  ])('Route 53 %#: 400 naming the rule, nothing stored', async (credentials, message) => {
    const res = await put('provider_b', { enabled: true, credentials })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
    expect(await stored(stack.panel, 'provider_b')).toBeUndefined()
  })

  // caddy-dns/rfc2136 checks nothing at provision: these would fail only at issuance (miekg/dns signing, net.Dial).
  const TSIG_OK = { server: '127.0.0.1:53', key_name: 'acme-update', key_alg: 'hmac-sha256', key: TSIG_SECRET }
  it.each([
    [{ ...TSIG_OK, key: TSIG_NOT_BASE64 }, /^credentials\.key: must be the TSIG secret in base64 as tsig-keygen prints it/],
    [
      { ...TSIG_OK, key_alg: 'hmac-md5' },
      /^credentials\.key_alg: must be one of hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha224, hmac-sha1/,
    ],
    [{ ...TSIG_OK, key_name: 'acme update' }, /^credentials\.key_name: must be the TSIG key name as the DNS server knows it/],
    [{ ...TSIG_OK, server: 'ns1.example.test' }, /^credentials\.server: must be host:port of the DNS server that accepts the updates/],
    [{ ...TSIG_OK, zone: 'example test' }, /^credentials\.zone: must be a DNS zone name/],
  ])('RFC 2136 %#: 400 naming the rule, never the secret, nothing stored', async (credentials, message) => {
    const res = await put('provider_c', { enabled: true, credentials })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
    expect(await stored(stack.panel, 'provider_c')).toBeUndefined()
  })

  it('valid credentials are stored and never come back', async () => {
    const a = await put('provider_a', { enabled: true, credentials: { api_token: CF_TOKEN } })
    expect([a.status, a.json.reconcile.status]).toEqual([200, 'applied'])
    const a2 = await put('provider_a', { enabled: true, credentials: { api_token: CF_TOKEN_2 } })
    expect(a2.status).toBe(200)
    const b = await put('provider_b', {
      enabled: true,
      credentials: { access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET, region: 'eu-west-3' },
    })
    expect(b.status).toBe(200)
    expect((await stored(stack.panel, 'provider_b'))?.plain).toEqual({
      access_key_id: AWS_KEY_ID,
      secret_access_key: AWS_SECRET,
      region: 'eu-west-3',
    })
    const c = await put('provider_c', { enabled: true, credentials: { ...TSIG_OK, zone: 'example.test' } })
    expect([c.status, c.json.configured]).toEqual([200, true])
    expect((await stored(stack.panel, 'provider_c'))?.plain).toEqual({ ...TSIG_OK, zone: 'example.test' })
    for (const secret of [CF_TOKEN, CF_TOKEN_2, AWS_SECRET, TSIG_SECRET, TSIG_NOT_BASE64, ...REFUSED])
      expect(await everyLogRow(stack.panel)).not.toContain(secret)
  })
})

describe('proxy text quoting a credential is redacted', () => {
  let stack: ProxyStack
  // PROVIDER_A_API_TOKEN is imported as it is (with a warning): the one way a
  // credential the cloudflare module refuses still reaches the production proxy.
  beforeAll(async () => {
    stack = await startProxyStack({ env: { PROVIDER_A_API_TOKEN: LEGACY_TOKEN } })
  })
  afterAll(async () => {
    await stack?.stop()
  })

  it('the rejection quoting the token answers 502 with "[redacted]"; the panel output, the health section and the log rows never hold it', async () => {
    expect(stack.panel.output()).toMatch(
      /PROVIDER_A_API_TOKEN must be a Cloudflare API token .*: the proxy will refuse any host using provider_a/,
    )
    const group = await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })
    const res = await createHost(stack, {
      domain: 'legacy.dns.example.test',
      target_group_id: group.id,
      tls_mode: 'auto',
      tls_challenge: 'dns',
      tls_dns_provider: 'provider_a',
      tls_acme_ca_url: 'https://127.0.0.1:9/directory', // never reached: the configuration is refused first
    })
    expect(res.status).toBe(502)
    // Caddy's own words: "API token '<the token>' appears invalid; ensure it's correctly entered..."
    expect(res.json.error).toMatch(/^proxy rejected configuration: .*dns\.providers\.cloudflare: API token '\[redacted\]' appears invalid/)
    const health = await stack.panel.request('/api/dashboard/health', { cookie: stack.admin })
    expect(health.json.proxy.last_error).toContain("API token '[redacted]' appears invalid")
    expect(stack.panel.output()).toMatch(/proxy rejected the configuration \(host legacy\.dns\.example\.test created\): .*'\[redacted\]'/)
    expect(stack.panel.output()).not.toContain(LEGACY_TOKEN)
    expect(await everyLogRow(stack.panel)).not.toContain(LEGACY_TOKEN)
    expect((await stack.panel.request('/api/hosts', { cookie: stack.admin })).json).toEqual([])
  })

  it('enabling the provider with the stored legacy token is refused until a valid one is sent', async () => {
    const res = await stack.panel.request('/api/dns-providers/provider_a', { method: 'PUT', cookie: stack.admin, body: { enabled: true } })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(
      /^credentials\.api_token: must be a Cloudflare API token .*; the stored value does not, so send a new one$/,
    )
    const fixed = await stack.panel.request('/api/dns-providers/provider_a', {
      method: 'PUT',
      cookie: stack.admin,
      body: { enabled: true, credentials: { api_token: CF_TOKEN } },
    })
    expect(fixed.status).toBe(200)
  })
})

describe('no secret in any output when the proxy refuses a configuration holding every credential', () => {
  // Every kind of secret the panel keeps: the three providers' credentials (the
  // TSIG secret as tsig-keygen prints it), the OIDC client secret, the SMTP
  // password, a webhook's signing secret, the VAPID private key generated at
  // boot, the master key and the admin password (registered by the harness).
  const TSIG = generateTsigKey('scan-key').secret
  const OIDC_SECRET = 'SECRET-oidc-client-secret-0123456789'
  const SMTP_PASSWORD = 'SECRET-smtp-password-0123456789'
  const HOOK_SECRET = 'SECRET-webhook-signing-0123456789'
  const LEGACY = 'SECRET-legacy-scan-token' // refused by the cloudflare module, which quotes it
  registerTestSecret(TSIG, OIDC_SECRET, SMTP_PASSWORD, HOOK_SECRET, LEGACY)
  let stack: ProxyStack
  let hook: Server
  const hookRequests: string[] = []
  const secrets = () => [TSIG, OIDC_SECRET, SMTP_PASSWORD, HOOK_SECRET, LEGACY, AWS_SECRET, TEST_MASTER_KEY, ADMIN.password]
  let vapidKey = ''

  beforeAll(async () => {
    stack = await startProxyStack({ env: { PROVIDER_A_API_TOKEN: LEGACY } })
    const port = await freePort()
    hook = createServer((req, res) => {
      let b = ''
      req.on('data', (c) => {
        b += c
      })
      req.on('end', () => {
        hookRequests.push(`${JSON.stringify(req.headers)}\n${b}`)
        res.end('ok')
      })
    })
    await new Promise<void>((r) => hook.listen(port, '127.0.0.1', r))
    const api = (path: string, method: string, body: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })
    // The VAPID key pair is made at boot: its private half joins the secrets every answer is scanned for.
    const sealed = await eventually(
      async () => (await stack.panel.db().execute("SELECT value FROM runtime_state WHERE key = 'push.vapid'")).rows[0]?.value,
      (v) => !!v,
      10_000,
      100,
    )
    vapidKey = createSecretsBox(TEST_MASTER_KEY).open(JSON.parse(String(sealed)).private_key_sealed, 'runtime_state/push.vapid')
    registerTestSecret(vapidKey)
    expect((await api('/api/settings', 'PUT', { 'oidc.client_secret': OIDC_SECRET, 'smtp.password': SMTP_PASSWORD })).status).toBe(200)
    const channel = await api('/api/notifications/channels', 'POST', {
      name: 'scan',
      type: 'webhook',
      config: { url: `http://127.0.0.1:${port}/`, secret: HOOK_SECRET },
    })
    expect(
      (
        await api('/api/notifications/rules', 'POST', {
          name: 'all',
          events: ['cert_renewal_failed', 'config_change', 'health_degraded'],
          channel_ids: [channel.json.id],
          throttle_seconds: 0,
        })
      ).status,
    ).toBe(201)
  })
  afterAll(async () => {
    await stack?.stop()
    hook?.close()
  })

  it("the refusal is answered with the proxy's words, redacted; no answer, log line, row or notification holds a secret", async () => {
    const put = (name: string, credentials: Record<string, string>) =>
      stack.panel.request(`/api/dns-providers/${name}`, { method: 'PUT', cookie: stack.admin, body: { enabled: true, credentials } })
    expect((await put('provider_b', { access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET })).status).toBe(200)
    expect(
      (await put('provider_c', { server: `127.0.0.1:${await freePort()}`, key_name: 'scan-key', key_alg: 'hmac-sha256', key: TSIG }))
        .status,
    ).toBe(200)
    const group = await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })
    const closedCa = `https://127.0.0.1:${await freePort()}/dir`
    const dns = (domain: string, provider: string) =>
      createHost(stack, {
        domain,
        target_group_id: group.id,
        tls_mode: 'auto',
        tls_challenge: 'dns',
        tls_dns_provider: provider,
        tls_acme_ca_url: closedCa,
      })
    expect((await dns('c.scan.example.test', 'provider_c')).status).toBe(201)
    expect((await dns('b.scan.example.test', 'provider_b')).status).toBe(201)
    // The proxy holds both credentials now (a push still in flight queues the second one:
    // wait for it); the next configuration adds the legacy token, which it refuses.
    const held = await eventually(
      async () => JSON.stringify(await stack.caddy.getConfig()),
      (config) => config.includes(TSIG) && config.includes(AWS_SECRET),
      15_000,
      200,
    )
    expect(held).toContain(TSIG)
    expect(held).toContain(AWS_SECRET)
    const refused = await dns('a.scan.example.test', 'provider_a')
    expect(refused.status).toBe(502)
    expect(refused.json.error).toMatch(/^proxy rejected configuration: .*API token '\[redacted\]' appears invalid/)

    // Notifications went out (configuration changes, the orders that stopped at the CA).
    await eventually(
      async () => hookRequests.filter((r) => r.includes('"cert_renewal_failed"')).length,
      (n) => n >= 2,
      30_000,
      200,
    )
    expect(hookRequests.some((r) => r.includes('"config_change"'))).toBe(true)
    // Every answer the panel gives about its state (each is scanned by the harness too).
    for (const path of [
      '/api/settings',
      '/api/dns-providers',
      '/api/hosts',
      '/api/notifications/channels',
      '/api/dashboard/health',
      '/api/system/health',
      '/api/logs?limit=1000',
      '/api/logs?source=caddy_error&limit=1000',
    ]) {
      const res = await stack.panel.request(path, { cookie: stack.admin })
      expect(res.status).toBe(200)
    }
    const rows = (await stack.panel.db().execute('SELECT source, actor, message, raw, path, user_agent FROM logs')).rows
    expect(rows.some((r) => r.source === 'caddy_error' && String(r.message) === 'could not get certificate from issuer')).toBe(true)
    expect(rows.some((r) => r.source === 'audit' && String(r.message) === 'dns_provider_update')).toBe(true)
    const state = (await stack.panel.db().execute('SELECT key, value FROM runtime_state')).rows.filter((r) => r.key !== 'push.vapid')
    const channels = (await stack.panel.db().execute('SELECT last_error FROM notification_channels')).rows
    const outputs = [stack.panel.output(), JSON.stringify(rows), JSON.stringify(state), JSON.stringify(channels), ...hookRequests]
    for (const text of outputs) for (const secret of [...secrets(), vapidKey]) expect(text).not.toContain(secret)
  })
})
