import { describe, expect, it } from 'vitest'
import { fieldWords, objectWords, summaryWords } from '../../ui/src/changes'
import { humanizeError } from '../../ui/src/fields'
import { normalizeStreamHealth, portsText, protectionWords } from '../../ui/src/streams'

// The Streams screen and the revisions/dry-run lists show a stream in words (docs/ui.md).
describe('streams in words', () => {
  it('a change of the streams part names the object a stream and its fields by the form words', () => {
    expect(objectWords({ part: 'streams', label: 'minecraft', change: 'created', fields: [] })).toBe('Stream minecraft created')
    expect(
      summaryWords({
        part: 'streams',
        label: 'ssh',
        change: 'changed',
        fields: ['listen_port_end', 'tls_sni', 'udp_probe_hex', 'engine_down_refuse'],
      }),
    ).toBe(
      'Stream ssh changed: Last port of the range, Server names (TLS SNI), UDP health probe, Refuse every connection while the security engine is down',
    )
    expect(fieldWords('proxy_protocol')).toBe('PROXY protocol to the upstream')
  })

  it("an API refusal of a stream field is shown with the form's label", () => {
    expect(humanizeError('listen_port: 443 is the HTTPS port of the proxy')).toBe('Listen port: 443 is the HTTPS port of the proxy')
    expect(humanizeError('tls_sni.1: must be a host name')).toBe('Server name 2: must be a host name')
    expect(humanizeError('listen_port_end: a range holds at most 1000 ports')).toBe('to port: a range holds at most 1000 ports')
  })

  it('ports: one port, or a range with its mapping', () => {
    expect(portsText({ listen_port: 25565, listen_port_end: null, range_mapping: 'one_to_one' })).toBe('25565')
    expect(portsText({ listen_port: 27000, listen_port_end: 27010, range_mapping: 'one_to_one' })).toBe(
      '27000 to 27010 (each to its own port)',
    )
    expect(portsText({ listen_port: 27000, listen_port_end: 27010, range_mapping: 'all_to_one' })).toBe('27000 to 27010 (all to one port)')
  })

  it('protection: every guard named, "none" without', () => {
    const names = new Map([[3, 'staff']])
    expect(protectionWords({ lan_only: true, access_list_id: 3, bouncer_enabled: true, engine_down_refuse: true }, names)).toBe(
      'LAN only, access list staff, bans refused, everything refused while the security engine is down',
    )
    expect(protectionWords({ lan_only: false, access_list_id: null, bouncer_enabled: false, engine_down_refuse: false }, names)).toBe(
      'none',
    )
  })

  it('health: a list or an object keyed by stream id; anything else is no health known', () => {
    const list = normalizeStreamHealth([
      { stream_id: 4, targets: [{ address: '10.0.0.9:22', state: 'unhealthy', cause: 'connection refused' }] },
    ])
    expect(list.get(4)).toEqual([{ address: '10.0.0.9:22', state: 'unhealthy', cause: 'connection refused', since: null }])
    const keyed = normalizeStreamHealth({ 5: { targets: [{ address: 'a:1', healthy: true }] } })
    expect(keyed.get(5)?.[0]?.state).toBe('healthy')
    expect(normalizeStreamHealth(null).size).toBe(0)
    expect(normalizeStreamHealth('oops').size).toBe(0)
  })
})
