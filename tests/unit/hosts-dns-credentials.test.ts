import { describe, expect, it } from 'vitest'
import { mergeCredentials } from '../../server/utils/hosts/dns-providers'
import { findDnsProvider } from '../../server/utils/hosts/dns-catalogue'
import { buildProxyConfig, hashProxyConfig } from '../../server/utils/proxy/build/index'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

const a = findDnsProvider('provider_a')!
const b = findDnsProvider('provider_b')!

describe('mergeCredentials — the PUT rules of the spec', () => {
  it('replaces fields that are sent and keeps fields sent as __UNCHANGED__', () => {
    const stored = { access_key_id: 'AKIA1', secret_access_key: 'old-secret', region: 'eu-west-1' }
    expect(mergeCredentials(b, stored, { access_key_id: 'AKIA2', secret_access_key: '__UNCHANGED__' }))
      .toEqual({ access_key_id: 'AKIA2', secret_access_key: 'old-secret' })
  })
  it('keeps everything when no credentials are sent (enabled flag only)', () => {
    expect(mergeCredentials(a, { api_token: 't' }, undefined)).toEqual({ api_token: 't' })
  })
  it.each([
    [{ api_token: 'x', zone_token: 'y' }, /credentials.zone_token: unknown field/],
    [{}, /credentials.api_token: is required/],
    [{ api_token: '__UNCHANGED__' }, /nothing is stored/],
    [{ api_token: 'a\nb' }, /control characters/],
    [{ api_token: 'x'.repeat(5000) }, /at most 4096 bytes/],
  ])('refuses %j', (given, message) => {
    expect(() => mergeCredentials(a, null, given as Record<string, string>)).toThrow(message)
  })
  it('never puts a value into an error message', () => {
    try { mergeCredentials(b, null, { access_key_id: 'AKIA-VISIBLE', secret_access_key: 'SECRET-VALUE', bogus: 'x' }) } catch (e) {
      expect((e as Error).message).not.toMatch(/SECRET-VALUE|AKIA-VISIBLE/)
    }
  })
})

describe('buildAcmePolicies — DNS-01 credentials', () => {
  const dnsHost = buildHostSnapshot({ tls_mode: 'auto', tls_challenge: 'dns', tls_dns_provider: 'provider_a', domain: '*.example.test' })
  it('inlines the token for the single-token provider, and the wildcard is allowed', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['dns'], hosts: [dnsHost], dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'tok-1' } } } })) as any
    expect(config.apps.tls.automation.policies[0]).toMatchObject({ subjects: ['*.example.test'], issuers: [{ challenges: { dns: { provider: { name: 'cloudflare', api_token: 'tok-1' } } } }] })
  })
  it('emits the environment placeholder when only PROVIDER_A_API_TOKEN is known', () => {
    const { config } = buildProxyConfig(buildSnapshot({ modules: ['dns'], hosts: [dnsHost], dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: '{env.PROVIDER_A_API_TOKEN}' } } } })) as any
    expect(config.apps.tls.automation.policies[0].issuers[0].challenges.dns.provider.api_token).toBe('{env.PROVIDER_A_API_TOKEN}')
  })
  it('a rotated credential changes the pushed configuration', () => {
    const with1 = buildProxyConfig(buildSnapshot({ modules: ['dns'], hosts: [dnsHost], dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'tok-1' } } } })).config
    const with2 = buildProxyConfig(buildSnapshot({ modules: ['dns'], hosts: [dnsHost], dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'tok-2' } } } })).config
    expect(hashProxyConfig(with1)).not.toBe(hashProxyConfig(with2))
  })
})
