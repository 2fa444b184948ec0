import { describe, expect, it } from 'vitest'
import { engineTimestamp, resolveEngineDbPath, type EngineBouncerRow, type EngineMachineRow } from '../../server/utils/security/engine-db'
import { engineKeyHash, matchBouncer, matchMachine, type NodeKeys } from '../../server/utils/security/engine-agents'
import type { NodeRow } from '../../server/utils/proxy/nodes/node-records'

// The pure parts of reading the engine's bouncers and machines (docs/security-engine.md,
// "Bouncers and machines"); the whole path against the real engine is
// tests/integration/proxy.nodes-bouncers.test.ts.

describe('engineTimestamp — ent times as SQLite holds them', () => {
  it.each([
    ['2026-11-25 00:20:09.297443057+00:00', '2026-11-25T00:20:09.297Z'],
    ['2026-11-25 02:20:09+02:00', '2026-11-25T00:20:09.000Z'],
    ['2026-11-25T00:20:09.1Z', '2026-11-25T00:20:09.100Z'],
  ])('%s', (text, iso) => expect(engineTimestamp(text)).toBe(iso))
  it.each([null, undefined, '', 'never'])('%j is no time', (v) => expect(engineTimestamp(v)).toBeNull())
})

describe('resolveEngineDbPath — db_config of config.yaml and config.yaml.local', () => {
  const has =
    (...paths: string[]) =>
    (p: string) =>
      paths.includes(p)
  it('takes the sqlite path, with .local merged over it', () => {
    const config = { db_config: { type: 'sqlite', db_path: '/var/lib/crowdsec/data/crowdsec.db' } }
    expect(resolveEngineDbPath(config, {}, has('/var/lib/crowdsec/data/crowdsec.db'))).toEqual({
      path: '/var/lib/crowdsec/data/crowdsec.db',
    })
    expect(resolveEngineDbPath(config, { db_config: { db_path: '/srv/cs.db' } }, has('/srv/cs.db'))).toEqual({ path: '/srv/cs.db' })
  })
  it('finds the file in CROWDSEC_DATA_DIR when the engine path is not mounted at the same place', () => {
    const config = { db_config: { type: 'sqlite', db_path: '/var/lib/crowdsec/data/crowdsec.db' } }
    expect(resolveEngineDbPath(config, {}, has('/mnt/cs-data/crowdsec.db'), '/mnt/cs-data')).toEqual({ path: '/mnt/cs-data/crowdsec.db' })
  })
  it.each([
    [{ db_config: { type: 'mysql', host: 'db' } }, /of type "mysql".*only from a sqlite database/],
    [{}, /not configured \(no db_config.type\)/],
    [{ db_config: { type: 'sqlite' } }, /names no db_config.db_path/],
    [{ db_config: { type: 'sqlite', db_path: '/var/lib/$' + '{DB_DIR}/crowdsec.db' } }, /environment variable/], // CrowdSec expands ${VAR} in its config
    [{ db_config: { type: 'sqlite', db_path: '/nowhere/crowdsec.db' } }, /not visible to the panel/],
  ])('%j: says why not', (config, why) => {
    const found = resolveEngineDbPath(config, {}, () => false)
    expect('error' in found && found.error).toMatch(why)
  })
})

const row = (id: number, name: string, adminUrl: string) => ({ id, name, adminUrl }) as NodeRow
const bouncer = (apiKeyHash: string, ipAddress = '') => ({ name: 'b', apiKeyHash, ipAddress }) as EngineBouncerRow

describe('matchBouncer — which node a bouncer is, by its key', () => {
  const a = row(2, 'edge-a', 'http://10.0.0.2:2019'),
    b = row(3, 'edge-b', 'http://10.0.0.3:2019'),
    c = row(4, 'edge-c', 'http://10.0.0.4:2019')
  const hashes = { shared: engineKeyHash('shared-key-0123456789'), panel: engineKeyHash('panel-key-0123456789') }
  const keys: NodeKeys = { rows: [a, b, c], own: new Map([[engineKeyHash('own-key-of-c-0123456789'), c]]), sharing: [a, b] }

  it('hashes keys as the engine stores them (hex SHA-512)', () => {
    expect(engineKeyHash('abc')).toMatch(/^ddaf35a193617aba/)
  })
  it.each([
    ['a node key', bouncer(engineKeyHash('own-key-of-c-0123456789')), { key: 'node', node: 'edge-c' }],
    ['the shared key from a node address', bouncer(hashes.shared, '10.0.0.3'), { key: 'shared', node: 'edge-b' }],
    ['the shared key from an unknown address', bouncer(hashes.shared, '10.9.9.9'), { key: 'shared', node: null }],
    ["the panel's key", bouncer(hashes.panel, '10.0.0.2'), { key: 'panel', node: null }],
    ['a key the panel does not hold', bouncer(engineKeyHash('x'), '10.0.0.2'), { key: 'other', node: null }],
  ])('%s', (_what, b, expected) => expect(matchBouncer(b, keys, hashes)).toMatchObject(expected))
  it('the shared key used by one node is that node, wherever it pulls from', () => {
    expect(matchBouncer(bouncer(hashes.shared, '192.0.2.1'), { ...keys, sharing: [a] }, hashes)).toMatchObject({ node: 'edge-a' })
  })
})

describe('matchMachine — a node agent by machine id, else by a unique address', () => {
  const nodes = [
    row(2, 'edge-a', 'http://10.0.0.2:2019'),
    row(3, 'edge-b', 'http://10.0.0.3:2019'),
    row(4, 'edge-c', 'http://10.0.0.3:2020'),
  ]
  const machine = (machineId: string, ipAddress = '') => ({ machineId, ipAddress }) as EngineMachineRow
  it.each([
    [machine('edge-a', '192.0.2.1'), 'edge-a'],
    [machine('EDGE-A'), 'edge-a'],
    [machine('host-17', '10.0.0.2'), 'edge-a'],
    // Two nodes on that address: the panel cannot tell which.
    [machine('host-18', '10.0.0.3'), null],
    [machine('host-19', '192.0.2.1'), null],
  ])('%j → %s', (m, node) => expect(matchMachine(m, nodes).node).toBe(node))
})
