import { describe, expect, it } from 'vitest'
import { safeReturnTarget } from '../../ui/src/redirect'

// The login screen's `rd` handling (ui/src/redirect.ts).
const here = { hostname: 'panel.example.com', origin: 'https://panel.example.com' }

describe('safeReturnTarget', () => {
  it('keeps paths of the app, but never back to login', () => {
    expect(safeReturnTarget('/hosts/12?x=1', here)).toEqual({ internal: '/hosts/12?x=1' })
    expect(safeReturnTarget('/login?rd=/x', here)).toEqual({ internal: '/' })
    expect(safeReturnTarget('', here)).toEqual({ internal: '/' })
  })
  it("loads the server's own /auth/ pages in full (strict session mode's code exchange), never through the app's router", () => {
    expect(safeReturnTarget('/auth/forward/start?rd=https%3A%2F%2Fapp.other.test%2F', here)).toEqual({
      external: 'https://panel.example.com/auth/forward/start?rd=https%3A%2F%2Fapp.other.test%2F',
    })
    expect(safeReturnTarget('https://panel.example.com/auth/forward/start?rd=x', here)).toEqual({
      external: 'https://panel.example.com/auth/forward/start?rd=x',
    })
  })
  it('follows URLs on the panel host or under its parent domain (ForwardAuth)', () => {
    expect(safeReturnTarget('https://app.example.com/a?b=1', here)).toEqual({ external: 'https://app.example.com/a?b=1' })
    expect(safeReturnTarget('https://example.com/', here)).toEqual({ external: 'https://example.com/' })
    expect(safeReturnTarget('https://panel.example.com/logs', here)).toEqual({ internal: '/logs' })
  })
  it('refuses other sites and tricks', () => {
    for (const bad of [
      'https://evil.test/',
      'https://example.com.evil.test/',
      '//evil.test/x',
      '/\\evil.test',
      'javascript:alert(1)',
      'https://app.example.com\\@evil.test/',
      'https://user:pw@app.example.com/',
      'https://app.example.com/\nx',
      'ftp://app.example.com/',
    ])
      expect(safeReturnTarget(bad, here)).toEqual({ internal: '/' })
  })
  it('on a host without a parent domain only the same host passes', () => {
    const lan = { hostname: 'panel.lan', origin: 'http://panel.lan' }
    expect(safeReturnTarget('http://other.lan/', lan)).toEqual({ internal: '/' })
    expect(safeReturnTarget('http://panel.lan/hosts', lan)).toEqual({ internal: '/hosts' })
  })
})
