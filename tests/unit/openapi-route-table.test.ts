import { describe, expect, it } from 'vitest'
import { matchDocumentedRoute } from '../../server/utils/openapi/route-table'

// The request path is matched against the document's paths as encoded segments
// (server/middleware/30-routes.ts): an encoded `?`, `#` or `/` in a parameter
// never falls through to another route.

describe('path parameters are decoded segments checked against their schema', () => {
  it.each([
    ['GET', '/api/users/%3F', /^user id: /],
    ['GET', '/api/dns-providers/%3F', /^catalogue name: must not contain \?/],
    ['POST', '/api/hosts/%3F/toggle', /^host id: /],
    ['GET', '/api/hosts/1%2F2', /^host id: must be a positive integer/],
    ['GET', '/api/users/%23', /^user id: /],
    ['GET', '/api/users/%E0%A4', /not valid percent-encoding/],
    ['GET', '/api/dns-providers/Provider-Z', /catalogue name: must be a catalogue name/],
    ['DELETE', '/api/security/whitelist/example.test', /must be an IP address or a CIDR/],
    ['PATCH', '/api/security/scenarios/no-author', /<author>\/<scenario>/],
    ['DELETE', '/api/security/countries/FRA', /alpha-2/],
  ])('%s %s is a bad parameter', (method, path, message) => {
    const m = matchDocumentedRoute(method, path)
    expect(m.kind).toBe('bad-parameter')
    expect((m as { message: string }).message).toMatch(message)
  })

  it.each([
    ['GET', '/api/users/12'],
    ['GET', '/api/logs?path=%3F'],
    ['GET', '/auth/forward?q=1'],
    ['DELETE', '/api/security/whitelist/10.0.0.0%2F8'],
    ['PATCH', '/api/security/scenarios/crowdsecurity%2Fhttp-probing'],
    ['GET', '/api/dns-providers/provider_a'],
    // Well-formed but not in the catalogue: the route answers 404 (a missing row), not the table 400.
    ['GET', '/api/dns-providers/provider_z'],
    ['GET', '/api/logs/stats'],
    ['HEAD', '/api/hosts'],
    ['GET', '/healthz'],
    ['GET', '/auth/forward'],
  ])('%s %s is documented', (method, path) => {
    expect(matchDocumentedRoute(method, path).kind).toBe('documented')
  })
})

describe('methods and unknown paths', () => {
  it('a method the path does not serve: 405 with what it serves', () => {
    expect(matchDocumentedRoute('DELETE', '/api/setup')).toEqual({
      kind: 'method-not-allowed',
      allow: 'GET, POST, HEAD',
      served: ['public', 'public'],
    })
    expect(matchDocumentedRoute('PUT', '/api/hosts')).toEqual({
      kind: 'method-not-allowed',
      allow: 'GET, POST, HEAD',
      served: ['session', 'admin'],
    })
    // A static segment wins over a parameter: unban-ip is not a decision id.
    expect(matchDocumentedRoute('DELETE', '/api/security/decisions/unban-ip')).toMatchObject({
      kind: 'method-not-allowed',
      allow: 'GET, POST, HEAD',
    })
  })

  it('an operation takes only the query parameters it declares (any for ForwardAuth and the loose OIDC queries)', () => {
    expect(matchDocumentedRoute('GET', '/api/hosts?debug=1')).toEqual({
      kind: 'bad-parameter',
      access: 'session',
      message: 'query: unknown parameter "debug"; GET /api/hosts takes none',
    })
    expect(matchDocumentedRoute('GET', '/api/hosts?')).toMatchObject({ kind: 'documented' })
    expect(matchDocumentedRoute('GET', '/api/logs?source=audit')).toMatchObject({ kind: 'documented' })
    expect(matchDocumentedRoute('PUT', '/api/hosts/1?dry_run=1&debug=1')).toEqual({
      kind: 'bad-parameter',
      access: 'admin',
      message: 'query: unknown parameter "debug"; PUT /api/hosts/{id} takes dry_run',
    })
    expect(matchDocumentedRoute('GET', '/auth/forward?anything=1')).toMatchObject({ kind: 'documented' })
    expect(matchDocumentedRoute('GET', '/api/auth/oidc/callback?code=a&state=b&iss=https%3A%2F%2Fidp.example.test')).toMatchObject({
      kind: 'documented',
    })
  })

  it('a match carries the access its operation declares', () => {
    expect(matchDocumentedRoute('GET', '/api/backups/1/download')).toEqual({ kind: 'documented', access: 'admin' })
    expect(matchDocumentedRoute('POST', '/api/auth/login')).toEqual({ kind: 'documented', access: 'public' })
    expect(matchDocumentedRoute('POST', '/api/auth/logout')).toEqual({ kind: 'documented', access: 'browser' })
    expect(matchDocumentedRoute('DELETE', '/api/tokens/3')).toEqual({ kind: 'documented', access: 'own' })
    expect(matchDocumentedRoute('DELETE', '/api/tokens/x')).toMatchObject({ kind: 'bad-parameter', access: 'own' })
  })

  it('a path the document does not know', () => {
    expect(matchDocumentedRoute('GET', '/api/no-such-thing')).toEqual({ kind: 'no-route' })
    expect(matchDocumentedRoute('GET', '/api/users/')).toEqual({ kind: 'no-route' })
  })
})
