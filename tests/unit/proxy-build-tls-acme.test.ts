import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

const autoHost = (o = {}) => buildHostSnapshot({ tls_mode: 'auto', aliases: ['www.host1.example.test'], ...o })
const policiesOf = (snapshot: ReturnType<typeof buildSnapshot>) => (buildProxyConfig(snapshot).config as any).apps.tls?.automation?.policies

describe('buildAcmePolicies — one policy per host, only the chosen challenge', () => {
  it('http-01: disables tls-alpn, uses the host CA and email over the global ones', () => {
    const [p] = policiesOf(buildSnapshot({
      hosts: [autoHost({ tls_acme_ca_url: 'https://ca.example.test/dir', tls_email: 'me@example.test' })],
      acme: { email: 'global@example.test', caUrl: 'https://global.example.test/dir', trustedRootsPemFile: '/roots.pem' },
    }))
    expect(p.subjects).toEqual(['host1.example.test', 'www.host1.example.test'])
    expect(p.issuers).toEqual([{
      module: 'acme', ca: 'https://ca.example.test/dir', email: 'me@example.test',
      trusted_roots_pem_files: ['/roots.pem'], challenges: { 'tls-alpn': { disabled: true } },
    }])
  })

  it('tls-alpn-01: disables http and falls back to the global CA and email', () => {
    const [p] = policiesOf(buildSnapshot({
      hosts: [autoHost({ tls_challenge: 'tls-alpn' })],
      acme: { email: 'global@example.test', caUrl: 'https://global.example.test/dir', trustedRootsPemFile: null },
    }))
    expect(p.issuers[0]).toEqual({ module: 'acme', ca: 'https://global.example.test/dir', email: 'global@example.test', challenges: { http: { disabled: true } } })
  })

  it('omits ca and email when neither the host nor the settings give one (the proxy default CA)', () => {
    const [p] = policiesOf(buildSnapshot({ hosts: [autoHost()] }))
    expect(p.issuers[0]).toEqual({ module: 'acme', challenges: { 'tls-alpn': { disabled: true } } })
  })

  it('dns-01: inlines the provider credentials (exclusive challenge) when the dns module exists', () => {
    const [p] = policiesOf(buildSnapshot({
      modules: ['dns'], hosts: [autoHost({ tls_challenge: 'dns', tls_dns_provider: 'provider_b' })],
      dnsProviders: { provider_b: { module: 'route53', credentials: { access_key_id: 'AKIA', secret_access_key: 's3cret' } } },
    }))
    expect(p.issuers[0].challenges).toEqual({ dns: { provider: { name: 'route53', access_key_id: 'AKIA', secret_access_key: 's3cret', region: 'us-east-1' } }, http: { disabled: true }, 'tls-alpn': { disabled: true } })
  })

  it('dns-01 without the dns module or without credentials: no policy and a warning', () => {
    const a = buildProxyConfig(buildSnapshot({ hosts: [autoHost({ tls_challenge: 'dns', tls_dns_provider: 'provider_a' })] }))
    expect((a.config as any).apps.tls).toBeUndefined()
    expect(a.warnings.join()).toMatch(/PROXY_MODULES lacks dns/)
    const b = buildProxyConfig(buildSnapshot({ modules: ['dns'], hosts: [autoHost({ tls_challenge: 'dns', tls_dns_provider: 'provider_a' })] }))
    expect(b.warnings.join()).toMatch(/provider_a has no credentials/)
  })

  it('puts auto hosts on the https server, never emits a catch-all policy, and none for tls_mode none', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [autoHost({ id: 2, domain: 'b.example.test', aliases: [] }), buildHostSnapshot()] })) as any
    expect(config.apps.tls.automation.policies).toHaveLength(1)
    expect(config.apps.tls.automation.policies.every((p: any) => p.subjects?.length)).toBe(true)
    expect(config.apps.http.servers.https.routes[0].match[0].host).toEqual(['b.example.test'])
    expect(config.apps.http.servers.http.routes[0].match[0].host).toEqual(['host1.example.test'])
  })
})
