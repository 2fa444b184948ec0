import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { LAN_GATE_BODY, LAN_RANGES, buildLanGateRoute } from '../../server/utils/proxy/build/lan-gate'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

describe('buildLanGateRoute — the route', () => {
  it('answers 403 to every peer outside the LAN ranges, and stops there', () => {
    expect(buildLanGateRoute()).toEqual({
      match: [{ not: [{ remote_ip: { ranges: ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'] } }] }],
      handle: [{ handler: 'static_response', status_code: 403, body: 'Access denied: LAN only\n' }],
      terminal: true,
    })
    expect(LAN_GATE_BODY).toBe('Access denied: LAN only\n')
  })

  it('matches on the socket peer only: no forwarded flag, no client_ip matcher (absent from Caddy 2.6.2)', () => {
    const text = JSON.stringify(buildLanGateRoute())
    expect(text).not.toContain('forwarded')
    expect(text).not.toContain('client_ip')
    expect([...LAN_RANGES].sort()).toEqual(['10.0.0.0/8', '127.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '::1/128', 'fc00::/7'])
  })
})

describe('buildLanGateRoute — in the host chain', () => {
  it('is the first route of a lan_only host', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ lan_only: true, auth_required: true })] }))
    expect(hostSubroutes(config, 'host1.example.test')[0]).toEqual(buildLanGateRoute())
  })

  it('is absent for a host without lan_only', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ lan_only: false }), buildHostSnapshot({ id: 2, lan_only: true })] }))
    expect(JSON.stringify(hostSubroutes(config, 'host1.example.test'))).not.toContain('remote_ip')
    expect(hostSubroutes(config, 'host2.example.test')[0].match[0].not[0].remote_ip).toBeDefined()
  })
})
