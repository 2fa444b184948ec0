import { describe, expect, it } from 'vitest'
import { sanitizeRedirectTarget } from '../../server/utils/auth/redirect'
import { cookieDomainFor, isLoopbackHostname } from '../../server/utils/auth/cookie'

const DOMAIN = 'panel.example.com'

describe('sanitizeRedirectTarget — one gate for every redirect', () => {
  const cases: Array<[string | undefined, string]> = [
    ['/hosts/12', '/hosts/12'],
    ['/a?b=c#d', '/a?b=c#d'],
    ['https://panel.example.com/x', 'https://panel.example.com/x'],
    ['https://app.example.com/y?z=1', 'https://app.example.com/y?z=1'],
    ['https://example.com/', 'https://example.com/'],
    ['https://evil.com/', '/'],
    ['https://example.com.evil.com/', '/'],
    ['https://evilexample.com/', '/'],
    ['//evil.com/x', '/'],
    ['/\\evil.com', '/'],
    ['https://app.example.com\\@evil.com', '/'],
    ['/ok\r\nSet-Cookie: x=1', '/'],
    ['/tab\there', '/'],
    ['javascript:alert(1)', '/'],
    ['https://user:pw@app.example.com/', '/'],
    ['', '/'],
    [undefined, '/'],
  ]
  it.each(cases)('%j -> %j', (input, expected) => {
    expect(sanitizeRedirectTarget(input, DOMAIN)).toBe(expected)
  })
})

describe('cookieDomainFor — parent domain of PANEL_DOMAIN', () => {
  it.each([
    ['panel.example.com', 'example.com'],
    ['a.b.example.org', 'b.example.org'],
    ['example.com', 'example.com'],
    ['localhost', undefined],
    ['192.168.1.10', undefined],
    ['::1', undefined],
  ])('%s -> %s', (domain, expected) => expect(cookieDomainFor(domain)).toBe(expected))
})

describe('isLoopbackHostname', () => {
  it.each([
    ['localhost', true],
    ['127.0.0.1', true],
    ['[::1]', true],
    ['192.168.1.5', false],
    ['panel.lan', false],
  ])('%s -> %s', (h, expected) => expect(isLoopbackHostname(h)).toBe(expected))
})
