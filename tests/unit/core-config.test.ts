import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../server/utils/core/config'

describe('parseConfig — defaults', () => {
  it('gives a working panel with no environment at all', () => {
    const { config, errors } = parseConfig({})
    expect(errors).toEqual([])
    expect(config.port).toBe(3000)
    expect(config.host).toBe('127.0.0.1')
    expect(config.mode).toBe('lan')
    expect(config.domain).toBe('localhost')
    expect(config.databaseUrl).toMatch(/^file:.*data\/panel\.db$/)
    expect(config.proxy.adminUrl).toBe('http://127.0.0.1:2019')
    expect(config.proxy.modules).toEqual(['crowdsec', 'waf', 'ratelimit', 'dns', 'geo', 'wafshare', 'storage'])
    expect(config.lapi.url).toBe('http://127.0.0.1:8080')
    expect(config.lapi.appsecUrl).toBeUndefined()
    expect(config.publicUrl).toBe('https://localhost')
    expect(config.proxy.renewIntervalSeconds).toBeUndefined()
  })

  it('reads LAPI_APPSEC_URL without its trailing slash', () => {
    expect(parseConfig({ LAPI_APPSEC_URL: 'http://crowdsec:7422/' }).config.lapi.appsecUrl).toBe('http://crowdsec:7422')
  })

  it('reads PROXY_MODULES=none as no modules', () => {
    expect(parseConfig({ PROXY_MODULES: 'none' }).config.proxy.modules).toEqual([])
  })

  it('reads PROXY_RENEW_INTERVAL_SECONDS as whole seconds', () => {
    expect(parseConfig({ PROXY_RENEW_INTERVAL_SECONDS: '60' }).config.proxy.renewIntervalSeconds).toBe(60)
  })
})

describe('parseConfig — every problem listed with its fix', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'abc' }, /PORT must be an integer/],
    [{ PANEL_MODE: 'cloud' }, /PANEL_MODE must be "lan" or "public"/],
    [{ PANEL_MASTER_KEY: 'short' }, /PANEL_MASTER_KEY must be at least 32 characters; generate one with/],
    [{ PANEL_DATABASE_URL: 'postgres://x' }, /PANEL_DATABASE_URL must start with file:/],
    [{ PROXY_MODULES: 'crowdsec,bogus' }, /PROXY_MODULES: unknown module "bogus"/],
    [{ PROXY_ADMIN_URL: 'not a url' }, /PROXY_ADMIN_URL must be an http\(s\) URL/],
    [{ PANEL_ADMIN_EMAIL: 'a@b.c' }, /must be set together/],
    [{ PANEL_ADMIN_EMAIL: 'a@b.c', PANEL_ADMIN_PASSWORD: 'short' }, /at least 12 characters/],
    [{ PANEL_DOMAIN: 'bad domain"' }, /PANEL_DOMAIN must be a host name/],
    [{ PROXY_RENEW_INTERVAL_SECONDS: '10m' }, /PROXY_RENEW_INTERVAL_SECONDS must be an integer from 1 to 86400/],
    [{ PROXY_RENEW_INTERVAL_SECONDS: '0' }, /PROXY_RENEW_INTERVAL_SECONDS must be an integer from 1 to 86400/],
    [{ PROXY_RENEW_INTERVAL_SECONDS: '1.5' }, /PROXY_RENEW_INTERVAL_SECONDS must be an integer from 1 to 86400/],
    [{ LAPI_APPSEC_URL: 'crowdsec:7422' }, /LAPI_APPSEC_URL must be an http\(s\) URL such as http:\/\/crowdsec:7422/],
  ]
  it.each(cases)('%j', (env, expected) => {
    expect(parseConfig(env).errors.join('\n')).toMatch(expected)
  })

  // Regression (issue 33, review Info "cookie domain on a public suffix"): PANEL_DOMAIN=myhome.duckdns.org
  // gave the cookie Domain=duckdns.org, which browsers refuse, and made every *.duckdns.org "on-domain".
  it.each([
    [
      'myhome.duckdns.org',
      /PANEL_DOMAIN "myhome\.duckdns\.org" would put the session cookie on "duckdns\.org", a public suffix.*panel\.myhome\.duckdns\.org/,
    ],
    ['panel.co.uk', /PANEL_DOMAIN "panel\.co\.uk" would put the session cookie on "co\.uk", a public suffix/],
    ['me.github.io', /on "github\.io", a public suffix/],
    ['github.io', /PANEL_DOMAIN "github\.io".*use a name inside a domain of your own/],
  ])('PANEL_DOMAIN=%s is refused: its cookie domain is a public suffix', (domain, expected) => {
    expect(parseConfig({ PANEL_DOMAIN: domain }).errors.join('\n')).toMatch(expected)
  })

  it.each([
    'panel.example.com',
    'panel.myhome.duckdns.org',
    'example.com',
    'panel.lan',
    'nas',
    'localhost',
    'panel.localhost',
    '192.168.1.10',
  ])('PANEL_DOMAIN=%s is accepted as before', (domain) => {
    expect(parseConfig({ PANEL_DOMAIN: domain }).errors).toEqual([])
  })

  it('collects several problems at once', () => {
    expect(parseConfig({ PORT: 'x', PANEL_MODE: 'y' }).errors).toHaveLength(2)
  })

  it('never echoes a secret value in an error', () => {
    const errors = parseConfig({ PANEL_MASTER_KEY: 'tiny-secret' }).errors.join('\n')
    expect(errors).not.toContain('tiny-secret')
  })
})
