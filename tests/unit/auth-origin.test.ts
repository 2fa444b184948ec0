import { describe, expect, it } from 'vitest'
import { isTrustedHostName, mutationSourceRefusal, panelOriginOf, type MutationSource } from '../../server/utils/auth/origin'
import { jsonContentTypeProblem, mimeEssenceOf } from '../../server/utils/core/content-type'

// Issue 33, item 1 (security review, finding 1 and "No Host check"): a browser
// mutation passes only from the panel's own origin; a JSON body only as
// application/json, parsed as the browser parses it.

const PANEL = { publicUrl: 'https://panel.example.com', domain: 'panel.example.com' }

describe('mutationSourceRefusal — who may change something', () => {
  const cases: Array<[string, MutationSource, boolean]> = [
    // Scripts: no Origin, no Sec-Fetch-Site.
    ['a script (no Origin, no Sec-Fetch-Site)', {}, true],
    ['a script with a Host only', { host: 'panel.example.com' }, true],
    // The panel's own origin.
    ['PANEL_PUBLIC_URL origin', { origin: 'https://panel.example.com', secFetchSite: 'same-origin', host: 'panel.example.com' }, true],
    ['PANEL_PUBLIC_URL origin, upper case', { origin: 'HTTPS://PANEL.EXAMPLE.COM' }, true],
    ['PANEL_PUBLIC_URL origin with its default port', { origin: 'https://panel.example.com:443' }, true],
    ['Sec-Fetch-Site none (typed by the user)', { origin: 'https://panel.example.com', secFetchSite: 'none' }, true],
    // Siblings under the parent domain: same site, not the panel (finding 1).
    ['a sibling origin', { origin: 'https://app.example.com', host: 'panel.example.com' }, false],
    ['the parent domain', { origin: 'https://example.com', host: 'panel.example.com' }, false],
    ['a sub-name of the panel', { origin: 'https://x.panel.example.com', host: 'panel.example.com' }, false],
    ['the panel name on another port', { origin: 'https://panel.example.com:8443', host: 'panel.example.com' }, false],
    ['the panel name over http', { origin: 'http://panel.example.com', host: 'panel.example.com:8080' }, false],
    ['another site', { origin: 'https://evil.example.net', host: 'panel.example.com' }, false],
    ['Origin null (sandboxed frame, cross-origin redirect)', { origin: 'null' }, false],
    ['a garbage Origin', { origin: 'not a url' }, false],
    ['a non-http Origin', { origin: 'file:///tmp/x.html' }, false],
    // Sec-Fetch-Site without Origin: a browser request another page started.
    ['Sec-Fetch-Site cross-site, no Origin', { secFetchSite: 'cross-site' }, false],
    ['Sec-Fetch-Site same-site, no Origin', { secFetchSite: 'same-site' }, false],
    ['Sec-Fetch-Site same-site with the panel Origin', { origin: 'https://panel.example.com', secFetchSite: 'same-site' }, false],
    ['Sec-Fetch-Site same-origin, no Origin', { secFetchSite: 'same-origin' }, true],
    // The request's own Host: only a name no DNS answer can hand to another site.
    ['IPv4 Host, Origin equal to it', { origin: 'http://192.168.1.20:3000', host: '192.168.1.20:3000' }, true],
    ['IPv6 Host, Origin equal to it', { origin: 'http://[::1]:3000', host: '[::1]:3000' }, true],
    ['loopback name', { origin: 'http://localhost:3000', host: 'localhost:3000' }, true],
    ['*.localhost', { origin: 'http://panel.localhost:3000', host: 'panel.localhost:3000' }, true],
    ['PANEL_DOMAIN on another port (LAN, no TLS)', { origin: 'http://panel.example.com:3000', host: 'panel.example.com:3000' }, true],
    // DNS rebinding: Origin and Host are both the attacker's name.
    ['a rebinding name', { origin: 'http://rebind.attacker.test:3000', host: 'rebind.attacker.test:3000' }, false],
    ['a rebinding sibling name', { origin: 'http://app.example.com:3000', host: 'app.example.com:3000' }, false],
    ['an IP Origin to another Host', { origin: 'http://192.168.1.20:3000', host: '192.168.1.21:3000' }, false],
    ['an IP Origin with no Host', { origin: 'http://192.168.1.20:3000' }, false],
  ]
  it.each(cases)('%s', (_name, src, allowed) => {
    const refusal = mutationSourceRefusal(src, PANEL)
    if (allowed) expect(refusal).toBeNull()
    else expect(refusal).toMatch(/^cross-site request refused: /)
  })

  it('names the origin to use and the setting that defines it', () => {
    expect(mutationSourceRefusal({ origin: 'https://app.example.com' }, PANEL)).toBe(
      "cross-site request refused: Origin https://app.example.com is not the panel's own origin (https://panel.example.com); set PANEL_PUBLIC_URL to the address browsers use for the panel",
    )
  })

  it('a PANEL_PUBLIC_URL with a port and a path gives its origin', () => {
    expect(panelOriginOf('http://panel.example.test:8080/panel')).toBe('http://panel.example.test:8080')
    const lan = { publicUrl: 'http://panel.example.test:8080', domain: 'panel.example.test' }
    expect(mutationSourceRefusal({ origin: 'http://panel.example.test:8080', host: 'proxied:80' }, lan)).toBeNull()
    expect(mutationSourceRefusal({ origin: 'http://app.example.test:8080', host: 'panel.example.test:8080' }, lan)).not.toBeNull()
  })
})

describe('isTrustedHostName — a Host a rebinding page cannot have', () => {
  it.each([
    ['panel.example.com', true],
    ['PANEL.example.com.', true],
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['[::1]', true],
    ['[2001:db8::1]', true],
    ['localhost', true],
    ['a.localhost', true],
    ['app.example.com', false],
    ['example.com', false],
    ['127.0.0.1.nip.io', false],
    ['', false],
  ])('%s: %s', (host, trusted) => expect(isTrustedHostName(host, 'panel.example.com')).toBe(trusted))
})

describe('mimeEssenceOf — the essence a browser would see', () => {
  it.each([
    ['application/json', 'application/json'],
    ['Application/JSON; charset=utf-8', 'application/json'],
    ['  application/json  ;x=y', 'application/json'],
    ['text/plain; charset=application/json', 'text/plain'],
    ['text/plain;application/json', 'text/plain'],
    ['multipart/form-data; boundary=x', 'multipart/form-data'],
    ['application/json, text/plain', null],
    ['application /json', null],
    ['application/json x', null],
    ['application', null],
    ['', null],
    [undefined, null],
  ])('%j → %j', (value, essence) => expect(mimeEssenceOf(value)).toBe(essence))
})

describe('jsonContentTypeProblem — a JSON route reads application/json only', () => {
  it.each([['application/json'], ['application/json; charset=utf-8'], ['APPLICATION/JSON']])('%s is JSON', (value) =>
    expect(jsonContentTypeProblem(value)).toBeNull(),
  )
  it.each([
    ['text/plain; charset=application/json', /got text\/plain/],
    ['text/plain;application/json', /got text\/plain/],
    ['application/x-www-form-urlencoded', /got application\/x-www-form-urlencoded/],
    ['multipart/form-data; boundary=x', /got multipart\/form-data/],
    ['application/problem+json', /got application\/problem\+json/],
    ['application/json, text/plain', /not a MIME type/],
    ['', /none was sent/],
    [undefined, /none was sent/],
  ])('%j is refused', (value, why) => {
    const problem = jsonContentTypeProblem(value)
    expect(problem).toMatch(/^request body must be JSON: send a JSON object with Content-Type: application\/json \(/)
    expect(problem).toMatch(why)
  })
})
