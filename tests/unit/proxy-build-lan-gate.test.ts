import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { LAN_GATE_BODY, LAN_RANGES, buildLanGateRoute } from '../../server/utils/proxy/build/lan-gate'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

const NO_PROXIES = { trustedProxies: [], headers: ['X-Forwarded-For'] }
const CDN = { trustedProxies: ['198.51.100.40/32'], headers: ['CF-Connecting-IP', 'X-Forwarded-For'] }

describe('buildLanGateRoute — the route', () => {
  it('answers 403 to every peer outside the LAN ranges, and stops there', () => {
    expect(buildLanGateRoute(NO_PROXIES)).toEqual({
      match: [
        { not: [{ remote_ip: { ranges: ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'] } }] },
      ],
      handle: [{ handler: 'static_response', status_code: 403, body: 'Access denied: LAN only\n' }],
      terminal: true,
    })
    expect(LAN_GATE_BODY).toBe('Access denied: LAN only\n')
  })

  it('with trusted proxies, judges the client address Caddy took from their header', () => {
    expect(buildLanGateRoute(CDN).match).toEqual([{ not: [{ client_ip: { ranges: LAN_RANGES } }] }])
  })

  it('without trusted proxies, matches on the socket peer only: no forwarded flag, no client_ip matcher (absent from Caddy 2.6.2)', () => {
    const text = JSON.stringify(buildLanGateRoute(NO_PROXIES))
    expect(text).not.toContain('forwarded')
    expect(text).not.toContain('client_ip')
    expect([...LAN_RANGES].sort()).toEqual(['10.0.0.0/8', '127.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '::1/128', 'fc00::/7'])
  })
})

describe('buildLanGateRoute — in the host chain', () => {
  it('is the first route of a lan_only host', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ lan_only: true, auth_required: true })] }))
    expect(hostSubroutes(config, 'host1.example.test')[0]).toEqual(buildLanGateRoute(NO_PROXIES))
  })

  it('is absent for a host without lan_only', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ lan_only: false }), buildHostSnapshot({ id: 2, lan_only: true })] }),
    )
    expect(JSON.stringify(hostSubroutes(config, 'host1.example.test'))).not.toContain('remote_ip')
    expect(hostSubroutes(config, 'host2.example.test')[0].match[0].not[0].remote_ip).toBeDefined()
  })
})

describe('buildTrustedProxiesServerOptions — both servers', () => {
  it('are absent without trusted proxies (Caddy 2.6.2 compatible)', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ hosts: [buildHostSnapshot({ tls_mode: 'none' }), buildHostSnapshot({ id: 2, tls_mode: 'auto' })] }),
    )
    for (const server of Object.values((config as any).apps.http.servers) as any[]) {
      expect(server.trusted_proxies).toBeUndefined()
      expect(server.client_ip_headers).toBeUndefined()
    }
  })

  it('name the ranges and the headers, parsed strictly from the right, on every server', () => {
    const { config } = buildProxyConfig(
      buildSnapshot({ clientIp: CDN, hosts: [buildHostSnapshot({ tls_mode: 'none' }), buildHostSnapshot({ id: 2, tls_mode: 'auto' })] }),
    )
    const servers = Object.values((config as any).apps.http.servers) as any[]
    expect(servers).toHaveLength(2)
    for (const server of servers) {
      expect(server.trusted_proxies).toEqual({ source: 'static', ranges: ['198.51.100.40/32'] })
      expect(server.client_ip_headers).toEqual(['CF-Connecting-IP', 'X-Forwarded-For'])
      expect(server.trusted_proxies_strict).toBe(1)
    }
  })
})
