import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSecretsBox } from '../../server/utils/core/secrets'
import { registerTestSecret, TEST_MASTER_KEY, type PanelHandle } from '../support/panel'
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
const REFUSED = ['"SECRET-quoted-0123456789-abcdefghijklm"', 'SECRET-short-9999', '{env.SECRET_CF_TOKEN_0123456789_ABCDEF}', 'SECRET with spaces 0123456789 abcdefghij']
// Imported from the environment without the save-time check: the module refuses it, quoting it.
const LEGACY_TOKEN = 'SECRET-legacy-token-too-short'
registerTestSecret(CF_TOKEN, CF_TOKEN_2, AWS_SECRET, LEGACY_TOKEN, ...REFUSED)

async function stored(panel: PanelHandle, name: string) {
  const row = (await panel.db().execute({ sql: 'SELECT enabled, credentials FROM dns_providers WHERE name = ?', args: [name] })).rows[0]
  if (!row?.credentials) return row ? { enabled: Number(row.enabled) === 1, plain: null } : undefined
  return { enabled: Number(row.enabled) === 1, plain: JSON.parse(createSecretsBox(TEST_MASTER_KEY).open(String(row.credentials), `dns_providers/${name}/credentials`)) }
}

async function everyLogRow(panel: PanelHandle): Promise<string> {
  return (await panel.db().execute('SELECT message, raw FROM logs')).rows.map((r) => `${r.message} ${r.raw}`).join('\n')
}

describe('DNS credentials the proxy module would refuse are refused at save', () => {
  let stack: ProxyStack
  beforeAll(async () => { stack = await startProxyStack() })
  afterAll(async () => { await stack?.stop() })
  const put = (name: string, body: unknown) => stack.panel.request(`/api/dns-providers/${name}`, { method: 'PUT', cookie: stack.admin, body })

  it.each(REFUSED)('Cloudflare token %#: 400 naming the rule, nothing stored', async (token) => {
    const res = await put('provider_a', { enabled: true, credentials: { api_token: token } })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^credentials\.api_token: must be a Cloudflare API token as the proxy's cloudflare module accepts it: 35 to 50 characters/)
    expect(await stored(stack.panel, 'provider_a')).toBeUndefined()
  })

  it.each([
    [{ access_key_id: 'AKIA1', secret_access_key: AWS_SECRET }, /^credentials\.access_key_id: must be an AWS access key ID/],
    [{ access_key_id: AWS_KEY_ID, secret_access_key: `${AWS_SECRET} ` + 'x' }, /^credentials\.secret_access_key: must be an AWS secret access key/],
    [{ access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET, region: 'eu-paris' }, /^credentials\.region: must be an AWS region such as us-east-1/],
  ])('Route 53 %#: 400 naming the rule, nothing stored', async (credentials, message) => {
    const res = await put('provider_b', { enabled: true, credentials })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(message)
    expect(await stored(stack.panel, 'provider_b')).toBeUndefined()
  })

  it('valid credentials are stored and never come back', async () => {
    const a = await put('provider_a', { enabled: true, credentials: { api_token: CF_TOKEN } })
    expect([a.status, a.json.reconcile.status]).toEqual([200, 'applied'])
    const a2 = await put('provider_a', { enabled: true, credentials: { api_token: CF_TOKEN_2 } })
    expect(a2.status).toBe(200)
    const b = await put('provider_b', { enabled: true, credentials: { access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET, region: 'eu-west-3' } })
    expect(b.status).toBe(200)
    expect((await stored(stack.panel, 'provider_b'))?.plain).toEqual({ access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET, region: 'eu-west-3' })
    for (const secret of [CF_TOKEN, CF_TOKEN_2, AWS_SECRET, ...REFUSED]) expect(await everyLogRow(stack.panel)).not.toContain(secret)
  })
})

describe('proxy text quoting a credential is redacted', () => {
  let stack: ProxyStack
  // PROVIDER_A_API_TOKEN is imported as it is (with a warning): the one way a
  // credential the cloudflare module refuses still reaches the production proxy.
  beforeAll(async () => { stack = await startProxyStack({ env: { PROVIDER_A_API_TOKEN: LEGACY_TOKEN } }) })
  afterAll(async () => { await stack?.stop() })

  it('the rejection quoting the token answers 502 with "[redacted]"; the panel output, the health section and the log rows never hold it', async () => {
    expect(stack.panel.output()).toMatch(/PROVIDER_A_API_TOKEN must be a Cloudflare API token .*: the proxy will refuse any host using provider_a/)
    const group = await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })
    const res = await createHost(stack, {
      domain: 'legacy.dns.example.test', target_group_id: group.id, tls_mode: 'auto', tls_challenge: 'dns', tls_dns_provider: 'provider_a',
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
    expect(res.json.error).toMatch(/^credentials\.api_token: must be a Cloudflare API token .*; the stored value does not, so send a new one$/)
    const fixed = await stack.panel.request('/api/dns-providers/provider_a', { method: 'PUT', cookie: stack.admin, body: { enabled: true, credentials: { api_token: CF_TOKEN } } })
    expect(fixed.status).toBe(200)
  })
})
