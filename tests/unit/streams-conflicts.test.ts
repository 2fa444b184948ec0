import { describe, expect, it } from 'vitest'
import { getDb, writeTransaction } from '../../server/utils/core/db'
import { collectDesiredState, restoreDesiredState } from '../../server/utils/proxy/revisions/desired-state'
import { portsToPublish, proxyPortConflict, proxyPortsOf, sniNamesOverlap, streamConflict } from '../../server/utils/streams/conflicts'
import { STREAM_DEFAULTS, type Stream } from '../../server/utils/streams/schemas'
import { streams, targetGroups } from '../../db/schema'
import { useMigratedDatabase } from '../support/migrated-db'

// The rules of who holds a port or a TLS server name (docs/streams.md, conflicts), and
// the restore of a revision recorded before streams existed.

const ports = proxyPortsOf({ httpPort: 80, httpsPort: 443, adminUrl: 'http://127.0.0.1:2019' })
const stream = (over: Partial<Stream>): Stream => ({
  ...STREAM_DEFAULTS,
  tls_sni: [],
  id: 1,
  name: 's',
  protocol: 'tcp',
  listen_port: 5000,
  target_group_id: 1,
  ...over,
})

describe('TLS server names', () => {
  it.each([
    ['a.example.com', 'a.example.com', true],
    ['*.example.com', 'a.example.com', true],
    ['a.example.com', '*.example.com', true],
    ['*.example.com', '*.example.com', true],
    // A wildcard covers one label, as the proxy matches it.
    ['*.example.com', 'b.a.example.com', false],
    ['*.example.com', 'example.com', false],
    ['*.example.com', '*.a.example.com', false],
    ['a.example.com', 'b.example.com', false],
    ['*.example.com', 'xexample.com', false],
  ])('%s and %s overlap: %s', (a, b, overlap) => {
    expect(sniNamesOverlap(a, b)).toBe(overlap)
  })
})

describe("the proxy's own ports", () => {
  it('the admin port comes from PROXY_ADMIN_URL, or its scheme', () => {
    expect(ports.adminPort).toBe(2019)
    expect(proxyPortsOf({ httpPort: 80, httpsPort: 443, adminUrl: 'http://admin.internal' }).adminPort).toBe(80)
  })

  it('HTTP and admin are refused for any stream; HTTPS only for one TCP port with tls_sni', () => {
    expect(proxyPortConflict(stream({ listen_port: 80 }), ports)).toMatch(/HTTP port/)
    expect(proxyPortConflict(stream({ listen_port: 2019, protocol: 'udp' }), ports)).toMatch(/admin API/)
    expect(proxyPortConflict(stream({ listen_port: 443 }), ports)).toMatch(/HTTPS port/)
    expect(proxyPortConflict(stream({ listen_port: 443, protocol: 'udp' }), ports)).toMatch(/HTTPS port/)
    expect(proxyPortConflict(stream({ listen_port: 443, tls_sni: ['a.example.com'] }), ports)).toBeNull()
    expect(proxyPortConflict(stream({ listen_port: 440, listen_port_end: 450 }), ports)).toBe(
      "listen_port: the range 440-450 includes port 443, which is the proxy's HTTPS port, where the web hosts answer; only a TCP stream with tls_sni names can share it (routed by the TLS server name)",
    )
    expect(proxyPortConflict(stream({ listen_port: 444, listen_port_end: 2018 }), ports)).toBeNull()
  })

  it('ports to publish: one port, a range, and an SNI stream on the HTTPS port that needs nothing new', () => {
    expect(portsToPublish(stream({ listen_port: 25565 }), ports)).toBe('25565/tcp')
    expect(portsToPublish(stream({ protocol: 'udp', listen_port: 27000, listen_port_end: 27010 }), ports)).toBe('27000-27010/udp')
    expect(portsToPublish(stream({ listen_port: 443, tls_sni: ['db.example.com'] }), ports)).toBe(
      '443/tcp (already published for the web hosts)',
    )
    expect(portsToPublish(stream({ listen_port: 8443, tls_sni: ['db.example.com'] }), ports)).toBe('8443/tcp')
  })
})

describe('two streams', () => {
  const games = stream({ id: 4, name: 'games', protocol: 'udp', listen_port: 27000, listen_port_end: 27010 })

  it('ranges of one protocol overlap at their edges; another protocol never collides', () => {
    expect(streamConflict(stream({ protocol: 'udp', listen_port: 27010 }), games)).toBe(
      'listen_port: port 27010 is already used by stream 4 ("games", 27000-27010/udp)',
    )
    expect(streamConflict(stream({ protocol: 'udp', listen_port: 26990, listen_port_end: 27000 }), games)).toMatch(
      /^listen_port: the range 26990-27000 includes port 27000, which is already used by stream 4/,
    )
    expect(streamConflict(stream({ protocol: 'udp', listen_port: 27011 }), games)).toBeNull()
    expect(streamConflict(stream({ protocol: 'tcp', listen_port: 27000, listen_port_end: 27010 }), games)).toBeNull()
  })

  it('two TCP streams share a port only when both route by SNI with no name in common', () => {
    const a = stream({ id: 2, name: 'a', listen_port: 8443, tls_sni: ['a.example.com', '*.apps.example.com'] })
    expect(streamConflict(stream({ listen_port: 8443, tls_sni: ['b.example.com'] }), a)).toBeNull()
    expect(streamConflict(stream({ listen_port: 8443, tls_sni: ['x.apps.example.com'] }), a)).toMatch(
      /^tls_sni: "x.apps.example.com" overlaps "\*.apps.example.com", which is already routed by stream 2/,
    )
    expect(streamConflict(stream({ listen_port: 8443 }), a)).toMatch(/share a port only when both route by tls_sni/)
    expect(streamConflict(stream({ listen_port: 8443, tls_sni: ['b.example.com'] }), stream({ listen_port: 8443 }))).toMatch(
      /^listen_port: port 8443 is already used by stream 1/,
    )
  })
})

const now = new Date().toISOString()
const _group = (id: number) => ({
  id,
  name: `g${id}`,
  targets: [{ address: '127.0.0.1:8080', weight: 1 }],
  scheme: 'http' as const,
  lbPolicy: 'round_robin' as const,
  createdAt: now,
  updatedAt: now,
})
useMigratedDatabase('streams-restore-', async () => {
  await getDb().insert(targetGroups).values(_group(1))
})

describe('restoring a revision', () => {
  it('writes its streams back and removes the ones created after it', async () => {
    const empty = await collectDesiredState(getDb())
    expect(empty.streams).toEqual({})
    await getDb()
      .insert(streams)
      .values({ name: 'ssh', protocol: 'tcp', listenPort: 2222, targetGroupId: 1, tlsSni: [], createdAt: now, updatedAt: now })
    const withSsh = await collectDesiredState(getDb())
    await writeTransaction((tx) => restoreDesiredState(tx, empty, 1))
    expect(await getDb().select().from(streams)).toEqual([])
    await writeTransaction((tx) => restoreDesiredState(tx, withSsh, 2))
    expect(await getDb().select().from(streams)).toEqual([expect.objectContaining({ name: 'ssh', listenPort: 2222 })])
  })

  it('one recorded before streams keeps them, and is refused when it lacks the target group a stream uses', async () => {
    await getDb().insert(targetGroups).values(_group(2))
    const { streams: _none, ...beforeStreams } = await collectDesiredState(getDb())
    await getDb()
      .insert(streams)
      .values({ name: 'db', protocol: 'tcp', listenPort: 5432, targetGroupId: 2, tlsSni: [], createdAt: now, updatedAt: now })
    // Restorable while the group is in it: the streams stay as they are.
    await writeTransaction((tx) => restoreDesiredState(tx, beforeStreams, 3))
    expect((await getDb().select().from(streams)).map((s) => s.name).sort()).toEqual(['db', 'ssh'])
    const { '2': _dropped, ...groups } = beforeStreams.target_groups!
    await expect(writeTransaction((tx) => restoreDesiredState(tx, { ...beforeStreams, target_groups: groups }, 4))).rejects.toThrow(
      /^revision 4 cannot be restored: stream db uses target group 2, which the revision does not hold/,
    )
    expect((await getDb().select().from(targetGroups)).map((g) => g.id)).toEqual([1, 2])
  })
})
