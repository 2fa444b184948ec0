import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCaddy, type CaddyHandle } from '../support/caddy'
import { eventually } from '../support/http'
import { registerTestSecret } from '../support/panel'
import { unusedPort } from '../support/ports'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'

// The two vendors' DNS modules of the production Caddy (caddy-dns/cloudflare
// v0.2.4, caddy-dns/route53 v1.6.2) load what the panel saves: a host on each
// provider is pushed and the proxy accepts it. Both modules provision without
// a network call, and every order here stops at a loopback CA where nothing
// listens, so no request leaves the machine (none would reach the vendors).
//
// The cloudflare module refuses a malformed token at provision, failing the
// whole /load and quoting it; the panel's rule must be exactly the module's, so
// the same candidates go through the panel (PUT, with a host using the
// provider: accepted values are pushed to the module at once) and straight to
// a second Caddy: both must agree, value by value.

const CF_TOKEN = 'SECRETvendor0123456789abcdefghij_-ABCD'
const AWS_KEY_ID = 'AKIAIOSFODNN7EXAMPLE'
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYVENDORKEY'
// Around the module's two patterns: ^[A-Za-z0-9_-]{35,50}$ and ^cf(ut|at)_[A-Za-z0-9_-]{32,256}$.
const CANDIDATES: Array<[string, string]> = [
  ['35 characters', `SECRETa${'b'.repeat(28)}`],
  ['50 characters', `SECRETc${'d'.repeat(43)}`],
  ['a cfut_ user token, 32 after the prefix', `cfut_SECRET${'e'.repeat(26)}`],
  ['a cfat_ account token, 256 after the prefix', `cfat_SECRET${'f_-'.repeat(83)}g`],
  ['34 characters', `SECRETh${'i'.repeat(27)}`],
  ['51 characters', `SECRETj${'k'.repeat(44)}`],
  ['a cfut_ token 31 after the prefix', `cfut_SECRET${'l'.repeat(25)}`],
  ['a cfxx_ prefix', `cfxx_SECRET${'m'.repeat(30)}`],
  ['a dot inside', `SECRETn${'o'.repeat(20)}.${'p'.repeat(10)}`],
  ['wrapped in quotes', `"SECRETq${'r'.repeat(35)}"`],
]
registerTestSecret(CF_TOKEN, AWS_SECRET, ...CANDIDATES.map(([, v]) => v))

let stack: ProxyStack
let direct: CaddyHandle
let groupId: number
let closedCa: string

beforeAll(async () => {
  stack = await startProxyStack()
  direct = await startCaddy()
  groupId = (await createGroup(stack, { name: 'g', targets: [{ address: '127.0.0.1:9' }] })).id
  closedCa = `https://127.0.0.1:${await unusedPort()}/dir` // nothing listens: every order stops here
})
afterAll(async () => {
  await stack?.stop()
  await direct?.stop()
})

const put = (name: string, credentials: Record<string, string>) =>
  stack.panel.request(`/api/dns-providers/${name}`, { method: 'PUT', cookie: stack.admin, body: { enabled: true, credentials } })
const dnsHost = (domain: string, provider: string) =>
  createHost(stack, {
    domain,
    target_group_id: groupId,
    tls_mode: 'auto',
    tls_challenge: 'dns',
    tls_dns_provider: provider,
    tls_acme_ca_url: closedCa,
    tls_email: 'ops@example.test',
  })

describe("provider_a and provider_b loaded by the production Caddy's own modules", () => {
  it('a host on each provider: both pushes are accepted and the proxy holds each module with its credentials', async () => {
    expect((await put('provider_a', { api_token: CF_TOKEN })).status).toBe(200)
    expect((await put('provider_b', { access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET, region: 'eu-west-3' })).status).toBe(200)
    const a = await dnsHost('a.vendors.example.test', 'provider_a')
    const b = await dnsHost('*.b.vendors.example.test', 'provider_b')
    expect([a.status, a.json.reconcile.status, b.status, b.json.reconcile.status]).toEqual([201, 'applied', 201, 'applied'])

    const policies = ((await stack.caddy.getConfig()) as any).apps.tls.automation.policies
    const providerOf = (subject: string) => policies.find((p: any) => p.subjects.includes(subject)).issuers[0].challenges.dns.provider
    expect(providerOf('a.vendors.example.test')).toEqual({ name: 'cloudflare', api_token: CF_TOKEN })
    expect(providerOf('*.b.vendors.example.test')).toEqual({
      name: 'route53',
      access_key_id: AWS_KEY_ID,
      secret_access_key: AWS_SECRET,
      region: 'eu-west-3',
    })
    // The proxy then tried to order: it stopped at the CA, before any call to a DNS provider.
    const failure = (
      await eventually(
        async () => (await stack.panel.request(`/api/hosts/${a.json.id}`, { cookie: stack.admin })).json.certificate,
        (c) => !!c?.last_failure,
        30_000,
        300,
      )
    ).last_failure
    expect(failure).toMatchObject({
      operation: 'obtain',
      kind: 'ca_unreachable',
      cause: expect.stringMatching(/^the ACME CA could not be reached: .*connection refused/),
    })
  })

  it.each(CANDIDATES)('Cloudflare token, %s: the panel accepts it exactly when the cloudflare module does', async (_name, token) => {
    const panel = await put('provider_a', { api_token: token })
    expect([200, 400]).toContain(panel.status) // never 502: what the panel accepts, the module loads
    if (panel.status === 400)
      expect(panel.json.error).toMatch(
        /^credentials\.api_token: must be a Cloudflare API token as the proxy's cloudflare module accepts it/,
      )
    else expect(panel.json.reconcile.status).toBe('applied')
    const module = await direct.load({
      admin: { listen: direct.adminListen, config: { persist: false } },
      apps: {
        tls: {
          automation: {
            policies: [
              {
                subjects: ['t.vendors.example.test'],
                issuers: [{ module: 'acme', ca: closedCa, challenges: { dns: { provider: { name: 'cloudflare', api_token: token } } } }],
              },
            ],
          },
        },
      },
    })
    if (module.status !== 200)
      expect(JSON.parse(module.body).error).toContain(`provision dns.providers.cloudflare: API token '${token}' appears invalid`)
    expect(module.status === 200).toBe(panel.status === 200)
  })
})
