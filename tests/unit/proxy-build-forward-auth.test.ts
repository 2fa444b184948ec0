import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { FORWARD_AUTH_HEADERS } from '../../server/utils/proxy/build/forward-auth'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

function forwardAuthOf(overrides = {}) {
  const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ auth_required: true })], ...overrides }))
  const chain = hostSubroutes(config, 'host1.example.test')[0].handle
  return chain.find((h: any) => h.rewrite?.uri === '/auth/forward')
}

describe('buildForwardAuthHandler — sub-request to the panel', () => {
  it('asks the panel /auth/forward with GET and passes method and URI', () => {
    const h = forwardAuthOf()
    expect(h.handler).toBe('reverse_proxy')
    expect(h.upstreams).toEqual([{ dial: '127.0.0.1:3000' }])
    expect(h.rewrite).toEqual({ method: 'GET', uri: '/auth/forward' })
    expect(h.headers.request.set).toEqual({ 'X-Forwarded-Method': ['{http.request.method}'], 'X-Forwarded-Uri': ['{http.request.uri}'] })
    expect(h.transport).toBeUndefined()
  })

  it('on 2xx deletes every client-sent X-Auth-* header before setting it from the answer', () => {
    const [onSuccess] = forwardAuthOf().handle_response
    expect(onSuccess.match).toEqual({ status_code: [2] })
    const routes = onSuccess.routes
    for (const name of FORWARD_AUTH_HEADERS) {
      const del = routes.findIndex((r: any) => r.handle[0].request?.delete?.includes(name))
      const set = routes.findIndex((r: any) => r.handle[0].request?.set?.[name])
      expect(del).toBeGreaterThan(-1)
      expect(set).toBe(del + 1)
      expect(routes[del].match).toBeUndefined() // unconditional
      expect(routes[set].match).toEqual([{ not: [{ vars: { [`{http.reverse_proxy.header.${name}}`]: [''] } }] }])
      expect(routes[set].handle[0].request.set[name]).toEqual([`{http.reverse_proxy.header.${name}}`])
    }
    expect([...FORWARD_AUTH_HEADERS]).toEqual(['X-Auth-Email', 'X-Auth-Name', 'X-Auth-Provider', 'X-Auth-User'])
  })

  it('uses TLS to a panel behind https', () => {
    expect(forwardAuthOf({ panelUpstream: { dial: 'panel:443', tls: true } }).transport).toEqual({ protocol: 'http', tls: {} })
  })

  it('is absent without auth_required', () => {
    expect(JSON.stringify(buildProxyConfig(buildSnapshot()).config)).not.toContain('/auth/forward')
  })
})
