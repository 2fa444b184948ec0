import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { LAN_RANGES } from '../../server/utils/proxy/build/lan-gate'
import { buildHostSnapshot, buildSnapshot, hostSubroutes } from '../support/factories'

describe('buildLanGateRoute — LAN-only hosts', () => {
  it('puts a terminal 403 for every non-LAN peer first in the host chain', () => {
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ lan_only: true })] }))
    const first = hostSubroutes(config, 'host1.example.test')[0]
    expect(first.match).toEqual([{ not: [{ remote_ip: { ranges: LAN_RANGES } }] }])
    expect(first.handle).toEqual([{ handler: 'static_response', status_code: 403, body: 'Access denied: LAN only\n' }])
    expect(first.terminal).toBe(true)
  })

  it('covers exactly the spec ranges and matches on the peer address, not forwarded headers', () => {
    expect([...LAN_RANGES].sort()).toEqual(['10.0.0.0/8', '127.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '::1/128', 'fc00::/7'])
    const { config } = buildProxyConfig(buildSnapshot({ hosts: [buildHostSnapshot({ lan_only: true })] }))
    const text = JSON.stringify(config)
    expect(text).not.toContain('forwarded')
    expect(text).not.toContain('client_ip')
  })

  it('emits no gate for a host without lan_only', () => {
    const { config } = buildProxyConfig(buildSnapshot())
    expect(JSON.stringify(config)).not.toContain('remote_ip')
  })
})
