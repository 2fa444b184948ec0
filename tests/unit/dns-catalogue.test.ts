import { readFileSync, readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  DNS_PROVIDER_CATALOGUE,
  delegationRecords,
  dnsChallengeConfig,
  findDnsProvider,
  secretCredentialValues,
} from '../../server/utils/hosts/dns-catalogue'
import { dnsProvidersDoc, DNS_DOC_END, DNS_DOC_START } from '../../server/utils/hosts/dns-docs'
import { mergeCredentials } from '../../server/utils/hosts/dns-providers'
import { DNS_SAMPLES, malformedForms } from '../support/dns-samples'

// The declarations are the one source of the catalogue, the checks, the module
// JSON, the redaction list, the UI form and docs/tls.md: each of those is
// derived here and held to what the other places (the migration's CHECK, the
// production Caddy's imports, the operator's page) say.

const repo = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url))
const names = DNS_PROVIDER_CATALOGUE.map((p) => p.name)

describe('every declaration', () => {
  it("the spec's three first with their names, every name unique, twenty-three in all (twenty vendors)", () => {
    expect(names.slice(0, 3)).toEqual(['provider_a', 'provider_b', 'provider_c'])
    expect(new Set(names).size).toBe(names.length)
    expect(new Set(DNS_PROVIDER_CATALOGUE.map((p) => p.module)).size).toBe(names.length)
    expect(names.length).toBeGreaterThanOrEqual(23)
  })

  it.each(DNS_PROVIDER_CATALOGUE.map((p) => [p.name, p] as const))(
    '%s: docs URL, module name, fields with a format, a label and where to find them',
    (_n, p) => {
      expect(p.docs_url).toMatch(/^https:\/\/[^\s]+$/)
      expect(p.proxy_module).toBe(`dns.providers.${p.module}`)
      expect(p.fields.length).toBeGreaterThan(0)
      expect(p.fields.some((f) => f.required)).toBe(true)
      for (const f of p.declared) {
        expect(f.key).toMatch(/^[a-z][a-z0-9_]*$/)
        expect(f.label.length).toBeGreaterThan(2)
        expect(f.where.length).toBeGreaterThan(10)
        expect(f.format.rule).toMatch(/^must be /)
        // A secret (masked) field is never public (kept readable in proxy errors).
        if (f.secret) expect(f.public).not.toBe(true)
      }
      // Every provider holds a value that is redacted, but Google's: its key stays in a file on the proxy node.
      expect(p.declared.some((f) => !f.public)).toBe(p.name !== 'googleclouddns')
    },
  )

  it('the API presents descriptors only: no format, no "where", nothing of the module JSON', () => {
    for (const p of DNS_PROVIDER_CATALOGUE)
      for (const f of p.fields)
        for (const k of Object.keys(f)) expect(['key', 'label', 'required', 'placeholder', 'secret', 'options']).toContain(k)
  })
})

describe('the samples and their malformed forms, provider by provider', () => {
  it('every provider has a sample holding every field', () => {
    expect(Object.keys(DNS_SAMPLES).sort()).toEqual([...names].sort())
    for (const p of DNS_PROVIDER_CATALOGUE) expect(Object.keys(DNS_SAMPLES[p.name]!).sort()).toEqual(p.fields.map((f) => f.key).sort())
  })

  it.each(DNS_PROVIDER_CATALOGUE.map((p) => [p.name, p] as const))(
    '%s: the sample is accepted; each field malformed is refused naming the field, never quoting the value',
    (_n, p) => {
      const good = DNS_SAMPLES[p.name]!
      expect(mergeCredentials(p, null, good)).toEqual(good)
      for (const f of p.fields)
        for (const [, bad] of malformedForms(good[f.key]!)) {
          let message = ''
          try {
            mergeCredentials(p, null, { ...good, [f.key]: bad })
          } catch (e) {
            message = (e as Error).message
          }
          expect(message).toMatch(new RegExp(`^credentials\\.${f.key}: must be `))
          // A public value may be a rule's own example (localhost, cn-hangzhou); no other is ever quoted.
          if (!p.public_fields.includes(f.key)) expect(message).not.toContain(good[f.key])
        }
    },
  )

  it.each(DNS_PROVIDER_CATALOGUE.map((p) => [p.name, p] as const))(
    '%s: every non-public value is in the redaction list, every secret one among them',
    (_n, p) => {
      const good = DNS_SAMPLES[p.name]!
      const redacted = secretCredentialValues(p, good)
      for (const f of p.declared) expect(redacted.includes(good[f.key]!)).toBe(!f.public)
    },
  )
})

/** A sample without the panel's own fields (delegation and propagation: never sent to the module). */
const moduleFields = (name: string) => {
  const { challenge_delegation: _d, propagation_timeout: _t, propagation_resolvers: _r, ...rest } = DNS_SAMPLES[name]!
  return rest
}

describe("the proxy module's JSON", () => {
  it('vendor fields go under their module keys with the module name; nothing else', () => {
    expect(dnsChallengeConfig(findDnsProvider('hetzner')!, moduleFields('hetzner'))).toEqual({
      provider: { name: 'hetzner', auth_api_token: DNS_SAMPLES.hetzner!.auth_api_token },
    })
    expect(dnsChallengeConfig(findDnsProvider('acmedns')!, moduleFields('acmedns'))).toEqual({
      provider: { name: 'acmedns', ...moduleFields('acmedns') },
    })
    // An optional field left out is not sent (the module's own default applies).
    const { client_ip: _ip, ...noIp } = moduleFields('namecheap')
    expect(dnsChallengeConfig(findDnsProvider('namecheap')!, noIp)).toEqual({ provider: { name: 'namecheap', ...noIp } })
  })

  it('route53 gets its default region; rfc2136 keeps its zone to the panel and asks its own server', () => {
    const { region: _r, ...b } = moduleFields('provider_b')
    expect(dnsChallengeConfig(findDnsProvider('provider_b')!, b)).toEqual({ provider: { name: 'route53', ...b, region: 'us-east-1' } })
    const { zone: _z, ...c } = moduleFields('provider_c')
    expect(dnsChallengeConfig(findDnsProvider('provider_c')!, moduleFields('provider_c'))).toEqual({
      provider: { name: 'rfc2136', ...c },
      resolvers: ['127.0.0.1:53'],
    })
  })

  it("the propagation settings go beside the provider, as the ACME issuer's dns challenge options; empty, Caddy's defaults stay", () => {
    const hetzner = findDnsProvider('hetzner')!
    const { provider } = dnsChallengeConfig(hetzner, moduleFields('hetzner'))
    expect(dnsChallengeConfig(hetzner, DNS_SAMPLES.hetzner!)).toEqual({
      provider,
      propagation_timeout: '90s',
      resolvers: ['127.0.0.1:5399'],
    })
    // The operator's servers replace RFC 2136's own server; several are kept in order.
    const c = findDnsProvider('provider_c')!
    const many = { ...moduleFields('provider_c'), propagation_resolvers: '127.0.0.1:5301, [::1]:5302' }
    expect(dnsChallengeConfig(c, many).resolvers).toEqual(['127.0.0.1:5301', '[::1]:5302'])
    expect(dnsChallengeConfig(c, moduleFields('provider_c'))).not.toHaveProperty('propagation_timeout')
    for (const [value, field] of [
      ['9', 'propagation_timeout'],
      ['601', 'propagation_timeout'],
      ['1.5', 'propagation_timeout'],
      ['localhost', 'propagation_resolvers'],
      ['127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4,127.0.0.1:5', 'propagation_resolvers'],
    ])
      expect(() => mergeCredentials(hetzner, null, { ...moduleFields('hetzner'), [field!]: value! })).toThrow(
        new RegExp(`^credentials\\.${field}: must be`),
      )
  })
})

describe('ClouDNS: an API user or a sub-user', () => {
  const cloudns = findDnsProvider('cloudns')!
  const { auth_id: _a, sub_auth_id: _s, ...neither } = DNS_SAMPLES.cloudns!

  it('either ID alone is enough, and only the one given is sent to the module', () => {
    const { sub_auth_id: _x, ...userOnly } = DNS_SAMPLES.cloudns!
    const { auth_id: _y, ...subOnly } = DNS_SAMPLES.cloudns!
    expect(mergeCredentials(cloudns, null, userOnly)).toEqual(userOnly)
    expect(mergeCredentials(cloudns, null, subOnly)).toEqual(subOnly)
    // The settings every provider takes (delegation, propagation) are not the module's fields.
    const { challenge_delegation: _d, propagation_timeout: _t, propagation_resolvers: _r, ...subModule } = subOnly
    expect(dnsChallengeConfig(cloudns, subModule)).toEqual({ provider: { name: 'cloudns', ...subModule } })
  })

  it('neither ID is a 400 naming both, never quoting the password', () => {
    let message = ''
    try {
      mergeCredentials(cloudns, null, neither)
    } catch (e) {
      message = (e as Error).message
    }
    expect(message).toBe('credentials.auth_id: is required for cloudns unless credentials.sub_auth_id is given')
    expect(message).not.toContain(DNS_SAMPLES.cloudns!.auth_password)
  })
})

describe('the places that must name every provider', () => {
  it("the latest migration's CHECK on dns_providers.name lists exactly the catalogue", () => {
    const dir = repo('db/migrations')
    const latest = readdirSync(dir)
      .filter((f) => f.endsWith('.up.sql') && /CREATE TABLE dns_providers/.test(readFileSync(`${dir}/${f}`, 'utf8')))
      .sort()
      .at(-1)!
    const check = /name TEXT PRIMARY KEY CHECK \(name IN \(([^)]*)\)\)/.exec(readFileSync(`${dir}/${latest}`, 'utf8'))![1]!
    expect(
      check
        .split(',')
        .map((s) => s.trim().replace(/'/g, ''))
        .sort(),
    ).toEqual([...names].sort())
  })

  it('the production Caddy imports every module the catalogue names', () => {
    const main = readFileSync(repo('deploy/proxy/caddy/main.go'), 'utf8')
    const missing = DNS_PROVIDER_CATALOGUE.filter((p) => !main.includes(`"github.com/caddy-dns/${p.module}"`)).map((p) => p.module)
    expect(missing).toEqual([])
    // And the reverse: a module compiled in but not offered is dead weight in the binary.
    const built = [...main.matchAll(/"github\.com\/caddy-dns\/([a-z0-9]+)"/g)].map((m) => m[1])
    expect(built.filter((m) => !DNS_PROVIDER_CATALOGUE.some((p) => p.module === m))).toEqual([])
  })

  it('docs/tls.md holds the generated provider list', () => {
    const doc = readFileSync(repo('docs/tls.md'), 'utf8')
    const section = doc.slice(doc.indexOf(DNS_DOC_START), doc.indexOf(DNS_DOC_END) + DNS_DOC_END.length)
    // To refresh the page: replace the section with the output of dnsProvidersDoc().
    expect(section).toBe(dnsProvidersDoc())
  })
})

describe('challenge delegation', () => {
  it('every provider but acme-dns takes a delegation zone, public and never sent to the module', () => {
    for (const p of DNS_PROVIDER_CATALOGUE) {
      const f = p.declared.find((d) => d.key === 'challenge_delegation')
      if (p.name === 'acmedns') expect(f).toBeUndefined()
      else expect(f).toMatchObject({ required: false, public: true, panel_only: true })
    }
  })

  it('the records to create: one CNAME per challenge name (a wildcard shares its base), all to the same target', () => {
    expect(delegationRecords('*.Shop.example.com', ['shop.example.com', 'www.example.com'], 'acme.example.net.')).toEqual([
      { name: '_acme-challenge.shop.example.com', type: 'CNAME', value: 'shop.example.com.acme.example.net' },
      { name: '_acme-challenge.www.example.com', type: 'CNAME', value: 'shop.example.com.acme.example.net' },
    ])
  })

  it('a provider limited to a zone takes a delegation zone only inside it', () => {
    const c = findDnsProvider('provider_c')!
    expect(mergeCredentials(c, null, { ...DNS_SAMPLES.provider_c!, challenge_delegation: 'acme.example.test' })).toBeTruthy()
    expect(() => mergeCredentials(c, null, { ...DNS_SAMPLES.provider_c!, challenge_delegation: 'acme.example.net' })).toThrow(
      'credentials.challenge_delegation: must lie inside the zone example.test that provider_c may update',
    )
    expect(() => mergeCredentials(c, null, { ...DNS_SAMPLES.provider_c!, challenge_delegation: 'net' })).toThrow(
      /^credentials\.challenge_delegation: must be a DNS zone name with at least two labels/,
    )
  })
})
