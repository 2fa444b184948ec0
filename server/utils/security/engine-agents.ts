import { createHash } from 'node:crypto'
import { getConfig } from '../core/config'
import { getDb } from '../core/db'
import { CANARY_NODE_ID, nodeAdminUrl, openNodeBouncerKey, readNodeRows, type NodeRow } from '../proxy/nodes/node-records'
import { readEngineBouncers, readEngineMachines, type EngineBouncerRow, type EngineMachineRow } from './engine-db'

// The engine's bouncers and machines as the panel shows them, each tied to the proxy node
// it belongs to where that can be told (docs/security-engine.md, "Bouncers and machines"):
// - a bouncer by its key: the engine stores the SHA-512 of each key, so the panel hashes
//   every node's own key and the shared LAPI_BOUNCER_KEY and compares;
// - a machine (a node's engine agent) by its machine id equal to the node's name, else by
//   its address equal to the host of exactly one node's admin URL.

/** Which of the panel's keys a bouncer authenticates with. */
export type BouncerKeyKind = 'node' | 'shared' | 'panel' | 'other'

export interface PresentedBouncer {
  name: string
  ip_address: string
  type: string
  version: string
  last_pull: string | null
  auth_type: string
  revoked: boolean
  auto_created: boolean
  created_at: string | null
  key: BouncerKeyKind
  node_id: number | null
  node: string | null
}

export interface PresentedMachine {
  machine_id: string
  ip_address: string
  version: string
  status: 'validated' | 'pending'
  last_push: string | null
  last_heartbeat: string | null
  auth_type: string
  created_at: string | null
  node_id: number | null
  node: string | null
  panel: boolean
}

/** How the engine stores a bouncer key (pkg/apiserver/middlewares/v1/api_key.go: hex SHA-512). */
export const engineKeyHash = (key: string) => createHash('sha512').update(key).digest('hex')

export interface NodeKeys {
  rows: NodeRow[]
  /** Hash of a node's own key → the node. */
  own: Map<string, NodeRow>
  /** The nodes without a key of their own: they push the shared key. */
  sharing: NodeRow[]
}

function _nodeKeys(rows: NodeRow[]): NodeKeys {
  const own = new Map<string, NodeRow>()
  const sharing: NodeRow[] = []
  for (const row of rows) {
    let key: string | null = null
    try {
      key = row.id === CANARY_NODE_ID ? null : openNodeBouncerKey(row)
    } catch {
      /* sealed under another master key: the node's Caddy was given nothing the panel can match */
    }
    if (key) own.set(engineKeyHash(key), row)
    else sharing.push(row)
  }
  return { rows, own, sharing }
}

const _adminHost = (row: NodeRow) => new URL(nodeAdminUrl(row)).hostname.replace(/^\[|\]$/g, '')

/** The one node among `candidates` whose admin URL's host is `ip`, or null (none, or several). */
function _byAddress(candidates: NodeRow[], ip: string): NodeRow | null {
  if (!ip) return null
  const hits = candidates.filter((row) => _adminHost(row) === ip)
  return hits.length === 1 ? hits[0]! : null
}

/**
 * Pure: which key and node a bouncer row is. The shared key's bouncer is the node using it when
 * one node does; with several, the engine keeps one row per address (`<name>@<ip>` for the later
 * ones), matched to the node whose admin URL has that host.
 */
export function matchBouncer(
  row: EngineBouncerRow,
  keys: NodeKeys,
  hashes: { shared: string | null; panel: string | null },
): Pick<PresentedBouncer, 'key' | 'node_id' | 'node'> {
  const own = keys.own.get(row.apiKeyHash)
  if (own) return { key: 'node', node_id: own.id, node: own.name }
  if (hashes.shared && row.apiKeyHash === hashes.shared) {
    const node = keys.sharing.length === 1 ? keys.sharing[0]! : _byAddress(keys.sharing, row.ipAddress)
    return { key: 'shared', node_id: node?.id ?? null, node: node?.name ?? null }
  }
  if (hashes.panel && row.apiKeyHash === hashes.panel) return { key: 'panel', node_id: null, node: null }
  return { key: 'other', node_id: null, node: null }
}

/** Pure: the node a machine is the engine agent of (see the module comment), or none. */
export function matchMachine(row: EngineMachineRow, nodes: NodeRow[]): Pick<PresentedMachine, 'node_id' | 'node'> {
  const node = nodes.find((n) => n.name === row.machineId.toLowerCase()) ?? _byAddress(nodes, row.ipAddress)
  return { node_id: node?.id ?? null, node: node?.name ?? null }
}

function _presentBouncers(rows: EngineBouncerRow[], keys: NodeKeys): PresentedBouncer[] {
  const { bouncerKey, panelBouncerKey } = getConfig().lapi
  const hashes = {
    shared: bouncerKey ? engineKeyHash(bouncerKey) : null,
    panel: panelBouncerKey ? engineKeyHash(panelBouncerKey) : null,
  }
  return rows.map((r) => ({
    name: r.name,
    ip_address: r.ipAddress,
    type: r.type,
    version: r.version,
    last_pull: r.lastPull,
    auth_type: r.authType,
    revoked: r.revoked,
    auto_created: r.autoCreated,
    created_at: r.createdAt,
    ...matchBouncer(r, keys, hashes),
  }))
}

/** `GET /api/security/bouncers`: every bouncer the engine knows; 503 when its database cannot be read. */
export async function listEngineBouncers(): Promise<PresentedBouncer[]> {
  const keys = _nodeKeys(await readNodeRows(getDb()))
  return _presentBouncers(readEngineBouncers(), keys)
}

/** `GET /api/security/machines`: every machine (watcher) the engine knows, pending ones included. */
export async function listEngineMachines(): Promise<PresentedMachine[]> {
  const nodes = await readNodeRows(getDb())
  const panelMachine = getConfig().lapi.machineId
  return readEngineMachines().map((r) => ({
    machine_id: r.machineId,
    ip_address: r.ipAddress,
    version: r.version,
    status: r.validated ? ('validated' as const) : ('pending' as const),
    last_push: r.lastPush,
    last_heartbeat: r.lastHeartbeat,
    auth_type: r.authType,
    created_at: r.createdAt,
    // The panel's own login (LAPI_MACHINE_ID), used to write decisions: it belongs to no node
    // and sends no heartbeat, so "never" there is not a fault.
    ...(r.machineId === panelMachine ? { node_id: null, node: null, panel: true } : { ...matchMachine(r, nodes), panel: false }),
  }))
}

export interface NodeBouncer {
  name: string
  last_pull: string | null
}

/**
 * Each node's bouncer for `GET /api/nodes`: the engine's bouncer row tied to the node (the one
 * pulled last when several are), null when none is or when the engine's database cannot be
 * read (the node list never fails for the engine; `GET /api/security/bouncers` says why).
 */
export async function readNodeBouncers(rows: NodeRow[]): Promise<Map<number, NodeBouncer>> {
  const out = new Map<number, NodeBouncer>()
  let engineRows: EngineBouncerRow[]
  try {
    engineRows = readEngineBouncers()
  } catch {
    return out
  }
  for (const b of _presentBouncers(engineRows, _nodeKeys(rows))) {
    if (b.node_id === null) continue
    const held = out.get(b.node_id)
    if (!held || (b.last_pull ?? '') > (held.last_pull ?? '')) out.set(b.node_id, { name: b.name, last_pull: b.last_pull })
  }
  return out
}
