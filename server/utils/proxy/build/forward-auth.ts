import type { Json } from './types'

export const FORWARD_AUTH_HEADERS = ['X-Auth-Email', 'X-Auth-Name', 'X-Auth-Provider', 'X-Auth-User'] as const

/**
 * The expanded form of Caddy's `forward_auth` (proxy-and-engine.md A4): a
 * sub-request to the panel's /auth/forward. On 2xx each X-Auth-* header is first
 * deleted from the client's request (so a client-sent copy never reaches the
 * upstream, whatever the answer carries) and then set from the panel's answer.
 * Any other answer (the panel's 302 to its login page) goes back to the client.
 */
export function buildForwardAuthHandler(panel: { dial: string; tls: boolean }): Json {
  const routes: Json[] = [{ handle: [{ handler: 'vars' }] }]
  for (const name of FORWARD_AUTH_HEADERS) {
    const placeholder = `{http.reverse_proxy.header.${name}}`
    routes.push({ handle: [{ handler: 'headers', request: { delete: [name] } }] })
    routes.push({
      match: [{ not: [{ vars: { [placeholder]: [''] } }] }],
      handle: [{ handler: 'headers', request: { set: { [name]: [placeholder] } } }],
    })
  }
  return {
    handler: 'reverse_proxy',
    upstreams: [{ dial: panel.dial }],
    ...(panel.tls ? { transport: { protocol: 'http', tls: {} } } : {}),
    rewrite: { method: 'GET', uri: '/auth/forward' },
    headers: { request: { set: { 'X-Forwarded-Method': ['{http.request.method}'], 'X-Forwarded-Uri': ['{http.request.uri}'] } } },
    handle_response: [{ match: { status_code: [2] }, routes }],
  }
}
