import { describe, expect, it } from 'vitest'
import { buildProxyConfig, stableStringify } from '../../server/utils/proxy/build/index'
import { buildHostSnapshot, buildSnapshot } from '../support/factories'

// Setting proxy.unknown_host_answer: the last route of each server, for a Host no enabled host names.
const hosts = [buildHostSnapshot(), buildHostSnapshot({ id: 2, domain: 'tls.example.test', tls_mode: 'auto' })]
const lastRoutes = (answer?: '404' | '421' | 'close') => {
  const { config } = buildProxyConfig(buildSnapshot({ hosts, ...(answer ? { unknownHostAnswer: answer } : {}) })) as any
  return {
    config,
    http: config.apps.http.servers.http.routes.at(-1),
    https: config.apps.http.servers.https.routes.at(-1),
  }
}
const text = (status: number) => ({
  handler: 'static_response',
  status_code: status,
  headers: { 'Content-Type': ['text/plain; charset=utf-8'] },
  body: 'No site is configured for this host name.\n',
})

describe('proxy config builder: the answer to an unknown host', () => {
  it("'404' (the default) is the answer of before the setting, byte for byte: 404 on plain HTTP, 421 on HTTPS", () => {
    const { config, http, https } = lastRoutes('404')
    // A panel without the setting stored builds the same bytes as one set to '404'.
    expect(stableStringify(config)).toBe(stableStringify(lastRoutes().config))
    expect(http).toEqual({
      '@id': 'panel_unknown_host_http',
      match: [{ not: [{ host: ['tls.example.test'] }] }],
      handle: [text(404)],
      terminal: true,
    })
    expect(https).toEqual({ '@id': 'panel_unknown_host_https', handle: [text(421)], terminal: true })
  })

  it("'421' answers 421 Misdirected Request on both servers, with the same text", () => {
    const { http, https } = lastRoutes('421')
    expect(http.handle).toEqual([text(421)])
    expect(http.match).toEqual([{ not: [{ host: ['tls.example.test'] }] }])
    expect(https.handle).toEqual([text(421)])
  })

  it("'close' aborts: no status, no header, no body on either server, the TLS names still left to the redirect", () => {
    const { http, https } = lastRoutes('close')
    for (const route of [http, https]) {
      expect(route.handle).toEqual([{ handler: 'static_response', abort: true }])
      expect(route.terminal).toBe(true)
    }
    expect(http.match).toEqual([{ not: [{ host: ['tls.example.test'] }] }])
    expect(https['@id']).toBe('panel_unknown_host_https')
  })
})
