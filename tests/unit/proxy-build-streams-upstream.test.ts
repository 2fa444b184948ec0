import { describe, expect, it } from 'vitest'
import { buildProxyConfig } from '../../server/utils/proxy/build/index'
import { STREAM_UPSTREAM_POLICY } from '../../server/utils/proxy/build/stream-logging'
import { STREAM_DEFAULTS, type Stream } from '../../server/utils/streams/schemas'
import { buildGroupSnapshot, buildHostSnapshot, buildSnapshot } from '../support/factories'

// The upstream of a connection row (docs/streams.md "Connection rows"): every stream proxy
// the builder writes, wherever it sits (a port, each port of a range, SNI on a port of its
// own or beside the web hosts), chooses through the project's recording policy around the
// group's own, and runs after the connection log handler that reads what it recorded.

const stream = (overrides: Partial<Stream>): Stream => ({
  ...STREAM_DEFAULTS,
  id: 1,
  name: 's',
  protocol: 'tcp',
  listen_port: 25565,
  target_group_id: 2,
  ...overrides,
})

/** Every handler list of the configuration that holds a layer-4 proxy. */
function proxyHandleLists(node: unknown, out: any[][] = []): any[][] {
  if (Array.isArray(node)) for (const n of node) proxyHandleLists(n, out)
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>
    if (Array.isArray(o.handle) && o.handle.some((h: any) => h?.handler === 'proxy')) out.push(o.handle)
    for (const v of Object.values(o)) proxyHandleLists(v, out)
  }
  return out
}

describe('stream proxies record the upstream they choose', () => {
  const groups = [
    buildGroupSnapshot({ id: 1, name: 'web' }),
    buildGroupSnapshot({ id: 2, name: 'lb', lb_policy: 'least_conn', targets: [{ address: '10.0.0.9:9000', weight: 1 }] }),
  ]
  const { config, warnings } = buildProxyConfig(
    buildSnapshot({
      hosts: [buildHostSnapshot({ id: 1, domain: 'www.example.test', tls_mode: 'auto' })],
      targetGroups: groups,
      streams: [
        stream({ id: 1, name: 'one port' }),
        stream({ id: 2, name: 'udp', protocol: 'udp', listen_port: 5353 }),
        stream({ id: 3, name: 'range', listen_port: 27000, listen_port_end: 27002, range_mapping: 'one_to_one' }),
        stream({ id: 4, name: 'sni beside hosts', listen_port: 443, tls_sni: ['git.example.test'] }),
        stream({ id: 5, name: 'sni own port', listen_port: 8443, tls_sni: ['db.example.test'] }),
      ],
    }),
  )

  it("wraps the group's policy in every proxy, after the connection log handler of the same stream", () => {
    expect(warnings.filter((w) => w.startsWith('stream'))).toEqual([])
    const lists = proxyHandleLists(config)
    // one port, udp, three range ports, two SNI routes
    expect(lists).toHaveLength(7)
    for (const handle of lists) {
      expect(handle).toHaveLength(2)
      expect(handle[0].handler).toBe('panel_conn_log')
      expect(handle[1].load_balancing.selection).toEqual({ policy: STREAM_UPSTREAM_POLICY, selection: { policy: 'least_conn' } })
    }
    expect(new Set(lists.map((h) => h[0].stream_id))).toEqual(new Set([1, 2, 3, 4, 5]))
  })

  it('names the module the production Caddy registers (streamext/upstream.go)', () => {
    expect(STREAM_UPSTREAM_POLICY).toBe('panel_record_upstream')
  })
})
