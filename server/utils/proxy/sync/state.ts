import { getConfig } from '../../core/config'
import { emitPanelEvent } from '../../ops/events'
import type { NodeStorageStatus } from '../storage/schemas'

// The push pipeline's state in one place (issue 34): what this process knows of
// the canary (the proxy of PROXY_ADMIN_URL) and of every other node, changed
// only by the named transitions below, and one set of outcome names for all of
// it. In memory, like the background runs: a restarted panel learns it again at
// its boot push and the loop's first look (two seconds); what must survive a
// restart (the last push and its hash) is the runtime-state row of reconcile.ts.

/**
 * Every outcome of the pipeline: a mutation's push, a look of the loop, a node's push.
 * - `applied`: the proxy (node) now holds the configuration: it was pushed;
 * - `unchanged`: it held it already: nothing was pushed;
 * - `unreachable`: it did not answer: the change is kept and pushed once it answers;
 * - `deferred`: not pushed because the security engine does not answer (the proxy was not contacted);
 * - `rejected`: it refused the configuration: the change was rolled back;
 * - `restored`, `restore-failed`: a node got back (or not) what it held before a refused roll;
 * - `rehearsed`: a dry run: nothing was pushed and the transaction is rolled back.
 */
export type SyncOutcome = 'applied' | 'unchanged' | 'unreachable' | 'deferred' | 'rejected' | 'restored' | 'restore-failed' | 'rehearsed'

/** A node's last push, as GET /api/proxy/nodes answers it (the words are the outcome's own). */
export type NodePushResult = Extract<SyncOutcome, 'applied' | 'unchanged' | 'rejected' | 'unreachable' | 'restored' | 'restore-failed'>

// The words the interface fixes, mapped from the outcome here and nowhere else.

/**
 * The `reconcile.status` of a mutation's answer (OpenAPI: applied | pending). `rehearsed` is never
 * answered: a dry run's transaction rolls back before its route answers, and the route answers
 * what would change instead (docs/revisions.md), so a dry run reports neither applied nor pending.
 */
export function reconcileStatusWord(outcome: SyncOutcome): 'applied' | 'pending' | 'rehearsed' {
  if (outcome === 'rehearsed') return 'rehearsed'
  return outcome === 'applied' || outcome === 'unchanged' ? 'applied' : 'pending'
}

/** `last_reconcile_status` of the health answer and of the stored row (OpenAPI: ok | pending | rejected | never). */
export type HealthStatusWord = 'ok' | 'pending' | 'rejected' | 'never'
export function healthStatusWord(outcome: SyncOutcome | null): HealthStatusWord {
  if (outcome === null) return 'never'
  if (outcome === 'rejected') return 'rejected'
  return outcome === 'unreachable' || outcome === 'deferred' ? 'pending' : 'ok'
}

interface _NodeState {
  name: string
  reachable: boolean | null
  config_hash: string | null
  last_checked_at: string | null
  last_push_at: string | null
  last_push_result: NodePushResult | null
  last_error: string | null
  caddy_build: { main_module: string; version: string; go_version: string | null } | null
  /** The content hash this node refused: not offered again by the loop until the configuration changes. */
  refusedHash: string | null
  /** Its certificate storage as its admin API last said (storage-health.ts), and since when it fails. */
  storage: NodeStorageStatus
  storageFailingSince: string | null
}

const _STORAGE_UNKNOWN: NodeStorageStatus = { module: null, ok: null, error: null, latency_ms: null, checked_at: null }

/** What the last successful push sent (without the bouncer warm-up route), its full hash and its node hash. */
export interface PushedConfig {
  hash: string
  json: string
  nodeHash: string
}

const _state = {
  /** The last attempt of a push, rejections included (they roll back and so leave no row). */
  lastAttempt: undefined as { at: string; outcome: SyncOutcome; error: string | null } | undefined,
  /** A push is owed: the loop pushes without waiting for drift. */
  retryRequested: false,
  /** The owed push waits for the security engine, not for the proxy. */
  deferredForEngine: false,
  /** What the proxy was last given: the configuration for an unreachable engine (known bans, 503 hosts). */
  pushedEngineDown: false,
  /** The last push has hosts that refuse everything while the engine is unreachable. */
  pushedFailClosed: false,
  /** Whether the last look at the proxy's admin API found it answering (null before the first). */
  reachable: null as boolean | null,
  lastPushed: undefined as PushedConfig | undefined,
  nodes: new Map<number, _NodeState>(),
}

function _node(node: { id: number; name: string }): _NodeState {
  let s = _state.nodes.get(node.id)
  if (!s) {
    s = {
      name: node.name,
      reachable: null,
      config_hash: null,
      last_checked_at: null,
      last_push_at: null,
      last_push_result: null,
      last_error: null,
      caddy_build: null,
      refusedHash: null,
      storage: _STORAGE_UNKNOWN,
      storageFailingSince: null,
    }
    _state.nodes.set(node.id, s)
  }
  s.name = node.name
  return s
}

/** The state and its transitions: nothing else changes it. */
export const proxySync = {
  // --- the canary's pushes (reconcile.ts)

  /** The proxy holds the configuration (pushed now or already held) and the change is recorded. */
  pushRecorded(at: string, outcome: 'applied' | 'unchanged', o: { engineDown: boolean; failClosed: boolean; pushed: PushedConfig }): void {
    _state.deferredForEngine = false
    _state.pushedEngineDown = o.engineDown
    _state.pushedFailClosed = o.failClosed
    _state.lastAttempt = { at, outcome, error: null }
    // What the other nodes are healed to (rollout.ts), once this state is committed.
    if (_state.lastPushed?.hash !== o.pushed.hash || _state.lastPushed.json !== o.pushed.json) _state.lastPushed = o.pushed
  },
  /** Not pushed: the engine does not answer. The loop pushes once it does. */
  pushDeferred(at: string, error: string): void {
    _state.lastAttempt = { at, outcome: 'deferred', error }
    _state.retryRequested = true
    _state.deferredForEngine = true
  },
  /** The proxy did not answer the push: the change is kept and the loop retries it. */
  pushUnreachable(at: string, error: string): void {
    _state.lastAttempt = { at, outcome: 'unreachable', error }
    _state.retryRequested = true
    _state.deferredForEngine = false
  },
  /** The proxy refused: the mutation rolls back (a deferred push stays deferred). */
  pushRejected(at: string, error: string): void {
    _state.lastAttempt = { at, outcome: 'rejected', error }
  },

  // --- the loop (loop.ts)

  /** The loop takes the owed push. */
  retryTaken(): void {
    _state.retryRequested = false
  },
  /** The loop's look at the proxy found it answering or not; says whether it was answering before. */
  proxyLooked(reachable: boolean): boolean | null {
    const before = _state.reachable
    _state.reachable = reachable
    return before
  },

  // --- the nodes (rollout.ts)

  /** A look at a node's admin API (the loop's, or a roll's read of what it holds). */
  nodeLooked(node: { id: number; name: string }, reachable: boolean, error: string | null, heldHash?: string | null): void {
    const s = _node(node)
    if (s.reachable === true && !reachable) emitPanelEvent('health_degraded', { component: 'proxy node', node: node.name, detail: error })
    s.reachable = reachable
    s.last_checked_at = new Date().toISOString()
    if (!reachable) s.last_error = error
    if (heldHash) s.config_hash = heldHash
  },
  /** The canary as the loop saw it: no event (the loop's own `proxyLooked` emits it for the proxy). */
  canaryLooked(node: { id: number }, reachable: boolean, error: string | null, heldHash: string | null): void {
    const s = _node({ id: node.id, name: _state.nodes.get(node.id)?.name ?? 'node-1' })
    s.reachable = reachable
    s.last_checked_at = new Date().toISOString()
    if (heldHash) s.config_hash = heldHash
    if (!reachable) s.last_error = error
  },
  nodePushed(node: { id: number; name: string }, result: NodePushResult, hash: string | null, error: string | null): void {
    const s = _node(node)
    s.last_push_at = new Date().toISOString()
    s.last_push_result = result
    s.last_error = error
    if (hash && (result === 'applied' || result === 'unchanged' || result === 'restored')) s.config_hash = hash
    if (result === 'rejected') s.refusedHash = hash
    else if (result === 'applied' || result === 'unchanged') s.refusedHash = null
    s.reachable = result !== 'unreachable'
    s.last_checked_at = s.last_push_at
  },
  nodeBuildRead(node: { id: number; name: string }, build: _NodeState['caddy_build']): void {
    _node(node).caddy_build = build
  },
  /**
   * A look at a node's certificate storage. One `health_degraded` event when it starts
   * failing (from working or from not known), none while it goes on failing.
   */
  nodeStorageLooked(node: { id: number; name: string }, storage: NodeStorageStatus): void {
    const s = _node(node)
    if (storage.ok === false && s.storage.ok !== false) {
      s.storageFailingSince = storage.checked_at
      emitPanelEvent('health_degraded', { component: 'proxy storage', node: node.name, detail: storage.error })
    }
    if (storage.ok !== false) s.storageFailingSince = null
    s.storage = storage
  },
  /** Nodes removed from the list are forgotten. */
  keepNodes(ids: Set<number>): void {
    for (const id of _state.nodes.keys()) if (!ids.has(id)) _state.nodes.delete(id)
  },
}

// --- reads

export function lastAttempt() {
  return _state.lastAttempt
}
export function syncFlags(): Readonly<
  Pick<typeof _state, 'retryRequested' | 'deferredForEngine' | 'pushedEngineDown' | 'pushedFailClosed'>
> {
  const { retryRequested, deferredForEngine, pushedEngineDown, pushedFailClosed } = _state
  return { retryRequested, deferredForEngine, pushedEngineDown, pushedFailClosed }
}
/** Whether the last contact with the proxy's admin API worked (null before the first). */
export function proxyReachable(): boolean | null {
  return _state.reachable
}
export function lastPushed(): PushedConfig | undefined {
  return _state.lastPushed
}
export function nodeState(node: { id: number; name: string }): Readonly<_NodeState> {
  return _node(node)
}

export interface NodeStatus {
  reachable: boolean | null
  config_hash: string | null
  in_sync: boolean | null
  last_checked_at: string | null
  last_push_at: string | null
  last_push_result: NodePushResult | null
  last_error: string | null
  caddy_build: { main_module: string; version: string; go_version: string | null } | null
  modules: string[]
}

/** What this process knows of a node (null fields: not looked at yet). */
export function nodeStatus(id: number): NodeStatus {
  const s = _state.nodes.get(id)
  const current = _state.lastPushed?.nodeHash ?? null
  return {
    reachable: s?.reachable ?? null,
    config_hash: s?.config_hash ?? null,
    in_sync: s?.config_hash && current ? s.config_hash === current : null,
    last_checked_at: s?.last_checked_at ?? null,
    last_push_at: s?.last_push_at ?? null,
    last_push_result: s?.last_push_result ?? null,
    last_error: s?.last_error ?? null,
    caddy_build: s?.caddy_build ?? null,
    // The panel builds for the modules it is told the proxies have (PROXY_MODULES): every node runs the same build.
    modules: [...getConfig().proxy.modules],
  }
}

/** A node's certificate storage as last looked at (all null: not looked at, or a build without the module). */
export function nodeStorageStatus(id: number): NodeStorageStatus {
  return _state.nodes.get(id)?.storage ?? _STORAGE_UNKNOWN
}

/** Every node whose certificate storage fails now, for the health problems. */
export function failingNodeStorages(): Array<{ id: number; name: string; error: string | null; since: string | null }> {
  return [..._state.nodes]
    .filter(([, s]) => s.storage.ok === false)
    .map(([id, s]) => ({ id, name: s.name, error: s.storage.error, since: s.storageFailingSince }))
}
