import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildAcmePolicies } from '../../server/utils/proxy/build/tls-acme'
import { FORWARD_AUTH_PROBE_HOST } from '../../server/utils/proxy/build/forward-auth'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

const autoHost = (o = {}) => buildHostSnapshot({ tls_mode: 'auto', aliases: ['www.host1.example.test'], ...o })
const policiesOf = (snapshot: ReturnType<typeof buildSnapshot>) => (buildProxyConfig(snapshot).config as any).apps.tls?.automation?.policies

describe('buildAcmePolicies — http-01', () => {
  it('disables tls-alpn only, and uses the host CA and email over the global ones', () => {
    const [p] = policiesOf(
      buildSnapshot({
        hosts: [autoHost({ tls_acme_ca_url: 'https://ca.example.test/dir', tls_email: 'me@example.test' })],
        acme: { email: 'global@example.test', caUrl: 'https://global.example.test/dir', trustedRootsPemFile: '/roots.pem' },
      }),
    )
    expect(p.subjects).toEqual(['host1.example.test', 'www.host1.example.test'])
    expect(p.issuers).toEqual([
      {
        module: 'acme',
        ca: 'https://ca.example.test/dir',
        email: 'me@example.test',
        trusted_roots_pem_files: ['/roots.pem'],
        challenges: { 'tls-alpn': { disabled: true } },
      },
    ])
  })

  it('omits ca, email and trusted roots when nothing gives them (the proxy default CA)', () => {
    const [p] = policiesOf(buildSnapshot({ hosts: [autoHost()] }))
    expect(p.issuers).toEqual([{ module: 'acme', challenges: { 'tls-alpn': { disabled: true } } }])
  })
})

describe('buildAcmePolicies — tls-alpn-01', () => {
  it('disables http only, and falls back to the global CA and email', () => {
    const [p] = policiesOf(
      buildSnapshot({
        hosts: [autoHost({ tls_challenge: 'tls-alpn' })],
        acme: { email: 'global@example.test', caUrl: 'https://global.example.test/dir', trustedRootsPemFile: null },
      }),
    )
    expect(p.issuers).toEqual([
      { module: 'acme', ca: 'https://global.example.test/dir', email: 'global@example.test', challenges: { http: { disabled: true } } },
    ])
  })
})

describe('buildAcmePolicies — dns-01', () => {
  const dnsHost = (provider: string) => autoHost({ tls_challenge: 'dns', tls_dns_provider: provider })

  it('cloudflare: inlines the provider credentials, and DNS-01 is the only challenge', () => {
    const [p] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost('provider_a')],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'cf-token' } } },
      }),
    )
    expect(p.issuers[0].challenges).toEqual({
      dns: { provider: { name: 'cloudflare', api_token: 'cf-token' } },
      http: { disabled: true },
      'tls-alpn': { disabled: true },
    })
  })

  it('route53: adds region us-east-1 only when the credentials lack one', () => {
    const creds = { access_key_id: 'AKIA', secret_access_key: 's3cret' }
    const [a] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost('provider_b')],
        dnsProviders: { provider_b: { module: 'route53', credentials: creds } },
      }),
    )
    expect(a.issuers[0].challenges.dns.provider).toEqual({ name: 'route53', ...creds, region: 'us-east-1' })
    const [b] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost('provider_b')],
        dnsProviders: { provider_b: { module: 'route53', credentials: { ...creds, region: 'eu-west-3' } } },
      }),
    )
    expect(b.issuers[0].challenges.dns.provider.region).toBe('eu-west-3')
  })

  it("rfc2136: the module gets server, key name, algorithm and secret (never the panel's zone), and the zone lookup and propagation check ask that server", () => {
    const creds = {
      server: '192.0.2.53:53',
      key_name: 'acme-update',
      key_alg: 'hmac-sha256',
      key: 'c2VjcmV0LXNlY3JldC1zZWNyZXQh',
      zone: 'example.test',
    }
    const [p] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost('provider_c')],
        dnsProviders: { provider_c: { module: 'rfc2136', credentials: creds } },
      }),
    )
    expect(p.issuers[0].challenges).toEqual({
      dns: {
        provider: {
          name: 'rfc2136',
          server: '192.0.2.53:53',
          key_name: 'acme-update',
          key_alg: 'hmac-sha256',
          key: 'c2VjcmV0LXNlY3JldC1zZWNyZXQh',
        },
        resolvers: ['192.0.2.53:53'],
      },
      http: { disabled: true },
      'tls-alpn': { disabled: true },
    })
    const { zone: _zone, ...withoutZone } = creds
    const [q] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost('provider_c')],
        dnsProviders: { provider_c: { module: 'rfc2136', credentials: withoutZone } },
      }),
    )
    expect(q.issuers[0].challenges.dns).toEqual(p.issuers[0].challenges.dns)
  })

  it('without the dns module or without credentials: no policy for that host, and a warning', () => {
    const a = buildProxyConfig(
      buildSnapshot({
        hosts: [dnsHost('provider_a')],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 't' } } },
      }),
    )
    expect((a.config as any).apps.tls).toBeUndefined()
    expect(a.warnings.join()).toMatch(/PROXY_MODULES lacks dns/)
    expect(JSON.stringify(a.config)).not.toContain('cloudflare')
    const b = buildProxyConfig(
      buildSnapshot({ modules: ['dns'], hosts: [dnsHost('provider_a'), autoHost({ id: 2, domain: 'b.example.test', aliases: [] })] }),
    )
    expect(b.warnings.join()).toMatch(/provider_a has no credentials/)
    expect((b.config as any).apps.tls.automation.policies.map((p: any) => p.subjects)).toEqual([['b.example.test']])
  })
})

describe('buildAcmePolicies — policy list', () => {
  it('one policy per auto host in host id order, never a catch-all, none for manual or none hosts', () => {
    const hosts = [
      autoHost({ id: 3, domain: 'c.example.test', aliases: [] }),
      buildHostSnapshot({ id: 2, tls_mode: 'manual' }),
      autoHost({ id: 1, domain: 'a.example.test', aliases: [] }),
      buildHostSnapshot({ id: 4 }),
    ]
    const policies = policiesOf(buildSnapshot({ hosts }))
    expect(policies.map((p: any) => p.subjects)).toEqual([['a.example.test'], ['c.example.test']])
    expect(policies.every((p: any) => p.subjects?.length)).toBe(true)
  })

  it('auto hosts go on the https server, tls_mode none on the plain one', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [autoHost({ id: 2, domain: 'b.example.test', aliases: [] }), buildHostSnapshot()] }),
    ) as any
    // Each list ends with the unknown-host refusal, which has no host matcher; the plain one
    // also holds the panel's ForwardAuth probe.
    expect(config.apps.http.servers.https.routes.map((r: any) => r.match?.[0].host)).toEqual([['b.example.test'], undefined])
    expect(config.apps.http.servers.http.routes.map((r: any) => r.match?.[0].host)).toEqual([
      ['host1.example.test'],
      [FORWARD_AUTH_PROBE_HOST],
      undefined,
    ])
  })

  it('is callable on its own with the hosts it is given', () => {
    const warnings: string[] = []
    expect(buildAcmePolicies(buildSnapshot(), [autoHost()], warnings)).toHaveLength(1)
    expect(warnings).toEqual([])
  })
})

describe('certificate maintenance (PROXY_RENEW_INTERVAL_SECONDS)', () => {
  it('unset: no renew_interval and no automation beyond the policies (Caddy keeps its 10 min)', () => {
    expect((buildProxyConfig(buildSnapshot()).config as any).apps.tls).toBeUndefined()
    expect(Object.keys((buildProxyConfig(buildSnapshot({ hosts: [autoHost()] })).config as any).apps.tls.automation)).toEqual(['policies'])
  })

  it('set: renew_interval in seconds next to the policies', () => {
    const automation = (buildProxyConfig(buildSnapshot({ hosts: [autoHost()], renewIntervalSeconds: 90 })).config as any).apps.tls
      .automation
    expect(automation.renew_interval).toBe('90s')
    expect(automation.policies.map((p: any) => p.subjects)).toEqual([['host1.example.test', 'www.host1.example.test']])
  })

  it('set: also without any TLS host, because a node keeps the interval of the first configuration it loads', () => {
    expect((buildProxyConfig(buildSnapshot({ renewIntervalSeconds: 1 })).config as any).apps.tls).toEqual({
      automation: { renew_interval: '1s' },
    })
  })
})

describe('buildAcmePolicies — DNS-01 delegated into another zone', () => {
  it("sets override_domain to the host's name inside the delegation zone; the field itself never reaches the module", () => {
    const [p] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [
          autoHost({ domain: '*.shop.example.test', aliases: ['shop.example.test'], tls_challenge: 'dns', tls_dns_provider: 'hetzner' }),
        ],
        dnsProviders: {
          hetzner: { module: 'hetzner', credentials: { auth_api_token: 'x'.repeat(32), challenge_delegation: 'acme.example.net.' } },
        },
      }),
    )
    expect(p.issuers[0].challenges.dns).toEqual({
      provider: { name: 'hetzner', auth_api_token: 'x'.repeat(32) },
      override_domain: 'shop.example.test.acme.example.net',
    })
  })

  it('without a delegation zone there is no override_domain', () => {
    const [p] = policiesOf(
      buildSnapshot({
        modules: ['dns'],
        hosts: [autoHost({ tls_challenge: 'dns', tls_dns_provider: 'hetzner' })],
        dnsProviders: { hetzner: { module: 'hetzner', credentials: { auth_api_token: 'x'.repeat(32) } } },
      }),
    )
    expect(p.issuers[0].challenges.dns).toEqual({ provider: { name: 'hetzner', auth_api_token: 'x'.repeat(32) } })
  })
})
