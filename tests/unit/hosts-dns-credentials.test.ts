import { describe, expect, it } from 'vitest'
import { mergeCredentials } from '../../server/utils/hosts/dns-providers'
import { findDnsProvider, secretCredentialValues } from '../../server/utils/hosts/dns-catalogue'
import { buildProxyConfig, hashProxyConfig } from '../../server/utils/proxy/build/index'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

const a = findDnsProvider('provider_a')!
const b = findDnsProvider('provider_b')!
const c = findDnsProvider('provider_c')!
// As tsig-keygen -a hmac-sha256 prints it (32 random bytes); not a real key.
const TSIG = 'qGz5YuwiOJmNxKLgeqxYLbfFVHOBdYjroWuJCFA6qPs='
const RFC2136 = { server: '192.0.2.53:53', key_name: 'acme-update', key_alg: 'hmac-sha256', key: TSIG }
// Shaped like real ones (AWS's documentation examples), none of them real.
const CF_TOKEN = 'Abcdefghij0123456789_-ABCDEFGHIJ0123456789'
const AWS_KEY_ID_1 = 'AKIAIOSFODNN7EXAMPLE',
  AWS_KEY_ID_2 = 'AKIAI44QH8DHBEXAMPLE'
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'

describe('mergeCredentials — the PUT rules of the spec', () => {
  it('replaces fields that are sent and keeps fields sent as __UNCHANGED__', () => {
    const stored = { access_key_id: AWS_KEY_ID_1, secret_access_key: AWS_SECRET, region: 'eu-west-1' }
    expect(mergeCredentials(b, stored, { access_key_id: AWS_KEY_ID_2, secret_access_key: '__UNCHANGED__' })).toEqual({
      access_key_id: AWS_KEY_ID_2,
      secret_access_key: AWS_SECRET,
    })
  })
  it('keeps everything when no credentials are sent (enabled flag only)', () => {
    expect(mergeCredentials(a, { api_token: CF_TOKEN }, undefined)).toEqual({ api_token: CF_TOKEN })
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
    try {
      mergeCredentials(b, null, { access_key_id: 'AKIA-VISIBLE', secret_access_key: 'SECRET-VALUE', bogus: 'x' })
    } catch (e) {
      expect((e as Error).message).not.toMatch(/SECRET-VALUE|AKIA-VISIBLE/)
    }
  })
})

describe('credential formats — what the proxy modules accept at provision, refused at save', () => {
  it.each([
    ['a legacy Cloudflare token (40 characters)', a, { api_token: CF_TOKEN }],
    ['35 characters, the shortest legacy token', a, { api_token: 'x'.repeat(35) }],
    ['50 characters, the longest legacy token', a, { api_token: 'x'.repeat(50) }],
    ['a cfut_ user token', a, { api_token: `cfut_${'A'.repeat(32)}` }],
    ['a cfat_ account token', a, { api_token: `cfat_${'b1_-'.repeat(20)}` }],
    ['AWS keys and a region', b, { access_key_id: AWS_KEY_ID_1, secret_access_key: AWS_SECRET, region: 'us-gov-west-1' }],
    ['AWS keys without a region', b, { access_key_id: AWS_KEY_ID_1, secret_access_key: AWS_SECRET }],
    ['RFC 2136 with an IPv4 server', c, RFC2136],
    [
      'RFC 2136 with a named server, a dotted key name, upper-case algorithm with a final dot and a zone',
      c,
      { server: 'ns1.example.com:5353', key_name: 'acme.example.com.', key_alg: 'HMAC-SHA512.', key: TSIG, zone: 'example.com' },
    ],
    ['RFC 2136 with a bracketed IPv6 server', c, { ...RFC2136, server: '[2001:db8::53]:53' }],
    ['RFC 2136 with hmac-sha1 and a 16-byte secret', c, { ...RFC2136, key_alg: 'hmac-sha1', key: 'AAAAAAAAAAAAAAAAAAAAAA==' }],
  ])('accepts %s', (_name, def, given) => {
    expect(mergeCredentials(def, null, given as Record<string, string>)).toEqual(given)
  })

  it.each([
    ['34 characters', a, { api_token: 'x'.repeat(34) }, /^credentials\.api_token: must be a Cloudflare API token/],
    ['51 characters', a, { api_token: 'x'.repeat(51) }, /credentials\.api_token: .*35 to 50 characters/],
    ['a quote inside', a, { api_token: `"${'x'.repeat(38)}"` }, /credentials\.api_token: .*no quotes, braces or spaces/],
    ['a placeholder', a, { api_token: '{env.CLOUDFLARE_API_TOKEN_ABCDEFGHIJKLMN}' }, /credentials\.api_token/],
    ['a space inside', a, { api_token: `${'x'.repeat(20)} ${'x'.repeat(20)}` }, /credentials\.api_token/],
    ['a cfat_ token with a dot', a, { api_token: `cfat_${'A'.repeat(40)}.x` }, /credentials\.api_token/],
    [
      'an access key id of 15 characters',
      b,
      { access_key_id: 'AKIAIOSFODNN7EX', secret_access_key: AWS_SECRET },
      /^credentials\.access_key_id: must be an AWS access key ID/,
    ],
    [
      'a secret with a space',
      b,
      { access_key_id: AWS_KEY_ID_1, secret_access_key: 'wJalrXUtnFEMI K7MDENG/bPxRfiCYEXAMPLEKEY' },
      /^credentials\.secret_access_key: must be an AWS secret access key/,
    ],
    [
      'a secret placeholder',
      b,
      { access_key_id: AWS_KEY_ID_1, secret_access_key: '{env.AWS_SECRET_ACCESS_KEY}' },
      /^credentials\.secret_access_key/,
    ],
    [
      'a region that is not one',
      b,
      { access_key_id: AWS_KEY_ID_1, secret_access_key: AWS_SECRET, region: 'Europe (Paris)' },
      /^credentials\.region: must be an AWS region such as us-east-1/,
    ],
    [
      'a server without a port (the module dials host:port)',
      c,
      { ...RFC2136, server: '192.0.2.53' },
      /^credentials\.server: must be host:port of the DNS server/,
    ],
    ['a server port out of range', c, { ...RFC2136, server: 'ns1.example.com:65536' }, /^credentials\.server: must be host:port/],
    ['an IPv6 server without brackets', c, { ...RFC2136, server: '2001:db8::53:53' }, /^credentials\.server: must be host:port/],
    ['a server that is a URL', c, { ...RFC2136, server: 'udp://192.0.2.53:53' }, /^credentials\.server/],
    ['a server with a placeholder', c, { ...RFC2136, server: '{env.DNS_SERVER}:53' }, /^credentials\.server/],
    [
      'a key name with a space',
      c,
      { ...RFC2136, key_name: 'acme update' },
      /^credentials\.key_name: must be the TSIG key name as the DNS server knows it/,
    ],
    ['a key name label over 63 characters', c, { ...RFC2136, key_name: `${'k'.repeat(64)}.example.com` }, /^credentials\.key_name/],
    [
      'hmac-md5 (miekg/dns no longer signs with it)',
      c,
      { ...RFC2136, key_alg: 'hmac-md5' },
      /^credentials\.key_alg: must be one of hmac-sha256, hmac-sha384, hmac-sha512, hmac-sha224, hmac-sha1/,
    ],
    ['an algorithm that is not one', c, { ...RFC2136, key_alg: 'sha256' }, /^credentials\.key_alg/],
    [
      'a secret that is not base64',
      c,
      { ...RFC2136, key: 'qGz5YuwiOJmNxKLgeqxYLbfFVHOBdYjroWuJCFA6qP!=' },
      /^credentials\.key: must be the TSIG secret in base64 as tsig-keygen prints it/,
    ],
    [
      'a secret without its padding',
      c,
      { ...RFC2136, key: TSIG.replace(/=$/, '') },
      /^credentials\.key: must be the TSIG secret in base64/,
    ],
    ['a secret in quotes as named.conf has it', c, { ...RFC2136, key: `"${TSIG}"` }, /^credentials\.key/],
    ['a secret of 12 bytes', c, { ...RFC2136, key: 'AAAAAAAAAAAAAAAA' }, /^credentials\.key: .*at least 16 bytes/],
    ['a zone with a slash', c, { ...RFC2136, zone: 'example.com/24' }, /^credentials\.zone: must be a DNS zone name/],
  ])('refuses %s with the rule, never the value', (_name, def, given, message) => {
    let error = ''
    try {
      mergeCredentials(def, null, given as Record<string, string>)
    } catch (e) {
      error = (e as Error).message
    }
    expect(error).toMatch(message)
    // Public values (a server address, an algorithm name) may match the rule's own examples.
    for (const value of secretCredentialValues(def, given as Record<string, string>)) expect(error).not.toContain(value)
  })

  it('a stored value is checked too when it is kept with __UNCHANGED__', () => {
    expect(() => mergeCredentials(a, { api_token: 'legacy-token-too-short' }, { api_token: '__UNCHANGED__' })).toThrow(
      /credentials\.api_token: must be a Cloudflare API token/,
    )
  })
})

describe('secretCredentialValues — what proxy text is redacted against', () => {
  it('every value but the public ones (region; server, key name, algorithm, zone)', () => {
    expect(secretCredentialValues(b, { access_key_id: AWS_KEY_ID_1, secret_access_key: AWS_SECRET, region: 'eu-west-3' })).toEqual([
      AWS_KEY_ID_1,
      AWS_SECRET,
    ])
    expect(secretCredentialValues(a, { api_token: CF_TOKEN })).toEqual([CF_TOKEN])
    expect(secretCredentialValues(c, { ...RFC2136, zone: 'example.com' })).toEqual([TSIG])
  })
})

describe('buildAcmePolicies — DNS-01 credentials', () => {
  const dnsHost = buildHostSnapshot({ tls_mode: 'auto', tls_challenge: 'dns', tls_dns_provider: 'provider_a', domain: '*.example.test' })
  it('inlines the token for the single-token provider, and the wildcard is allowed', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'tok-1' } } },
      }),
    ) as any
    expect(config.apps.tls.automation.policies[0]).toMatchObject({
      subjects: ['*.example.test'],
      issuers: [{ challenges: { dns: { provider: { name: 'cloudflare', api_token: 'tok-1' } } } }],
    })
  })
  it('emits the environment placeholder when only PROVIDER_A_API_TOKEN is known', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: '{env.PROVIDER_A_API_TOKEN}' } } },
      }),
    ) as any
    expect(config.apps.tls.automation.policies[0].issuers[0].challenges.dns.provider.api_token).toBe('{env.PROVIDER_A_API_TOKEN}')
  })
  it('a rotated credential changes the pushed configuration', () => {
    const with1 = buildProxyConfig(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'tok-1' } } },
      }),
    ).config
    const with2 = buildProxyConfig(
      buildSnapshot({
        modules: ['dns'],
        hosts: [dnsHost],
        dnsProviders: { provider_a: { module: 'cloudflare', credentials: { api_token: 'tok-2' } } },
      }),
    ).config
    expect(hashProxyConfig(with1)).not.toBe(hashProxyConfig(with2))
  })
})
