import { mkdirSync } from 'node:fs'
import { getDb, writeTransaction, type Executor } from '../../core/db'
import { writeAudit, systemActor } from '../../core/audit'
import { logger } from '../../core/log'
import { redactSecrets } from '../../core/redact'
import { hashOfConfigText, hashProxyConfig, stableStringify } from '../build/index'
import { readHeldConfig, type HeldConfig } from './held-hash'
import { loadProxyConfig, readProxyBuild, type LoadResult } from './client'
import { lastPushed, nodeState, proxySync } from '../sync/state'
import { CANARY_NODE_ID, nodeLogDir, readRolloutNodes, sharedTextOf, toNodeText, type ProxyNode } from './node-records'

// Rolling push to every proxy node (docs/scaling.md). The canary (node 1, the
// node of PROXY_ADMIN_URL) first, then the others one by one:
// - a node that refuses the configuration stops the roll: the nodes already
//   pushed get back the configuration they held before, and the push fails
//   naming the node and quoting its error (the mutation rolls back, 502);
// - a node that does not answer is skipped: the roll goes on and the node gets
//   the configuration from the reconcile loop once it answers (healNodes).
// With node 1 alone this is exactly the single-node push of before.
//
// A node keeps its own `admin` block (its listener, its remote admin endpoint
// and identity): node 1 gets the panel's, the others what they hold. Their
// configuration hash is therefore taken without the admin block.

const _HEAL_ACTOR = systemActor('reconciler')

/**
 * The configuration without the admin block, which is each node's own, and with the node's own
 * paths read as the shared ones (`node`: whose configuration this is), so that every node holding
 * the current configuration shows the same hash.
 */
export function nodeConfigHash(config: unknown, node?: Pick<ProxyNode, 'rewrites'>): string {
  if (!config || typeof config !== 'object') return hashProxyConfig(config)
  const { admin: _admin, ...rest } = config as Record<string, unknown>
  return hashProxyConfig(rest, node?.rewrites.length ? (text) => sharedTextOf(node, text) : undefined)
}

/** A node's slot for heldConfigHash: its node hash depends on its path rewrites too. */
const _nodeSlot = (node: Pick<ProxyNode, 'id' | 'rewrites'>) => `node ${node.id} ${JSON.stringify(node.rewrites)}`

/**
 * nodeConfigHash of a configuration without warm-up routes, from its stableStringify text:
 * the keys are sorted, so the text without the admin block is the text less its leading
 * `"admin":…` member (no second serialisation of the whole configuration). Anything else
 * (no admin block first) is hashed the long way.
 */
export function nodeConfigHashOfText(config: Record<string, unknown>, stableText: string): string {
  if (config.admin === undefined) return hashOfConfigText(stableText)
  const head = `{"admin":${stableStringify(config.admin)}`
  if (!stableText.startsWith(head)) return nodeConfigHash(config)
  const rest = stableText.slice(head.length)
  return hashOfConfigText(rest.startsWith(',') ? `{${rest.slice(1)}` : `{${rest}`)
}

/** The canary as the reconcile loop saw it (it reads node 1 itself); `held.hash`: hashProxyConfig of what it holds. */
export function noteCanaryHeld(held: HeldConfig | { ok: false; error: string }): void {
  // The loop looks every 2 s: holding what was last pushed, its node hash is known (no second hash of the whole configuration).
  const pushed = lastPushed()
  const heldHash = held.ok && held.hash !== null ? (held.hash === pushed?.hash ? pushed.nodeHash : nodeConfigHash(held.config)) : null
  proxySync.canaryLooked({ id: CANARY_NODE_ID }, held.ok, held.ok ? null : held.error, heldHash)
}

/**
 * A node's log folder is made by the panel when it can reach it (one machine, or the shared
 * folder mounted): Caddy would make it for its own files, but Coraza does not for its audit
 * log, and a folder the panel made is one the panel can read. Elsewhere the node makes it.
 */
function _prepareLogFolder(node: ProxyNode): void {
  if (node.id === CANARY_NODE_ID) return
  try {
    mkdirSync(nodeLogDir(node.id), { recursive: true })
  } catch {
    /* not reachable from here: the node's own */
  }
}

/** The JSON a node gets: the configuration with the node's own admin block and paths (ProxyNode.rewrites). */
function _bodyFor(node: ProxyNode, config: Record<string, unknown>, configJson: string, held: unknown): string {
  if (node.id === CANARY_NODE_ID) return configJson
  _prepareLogFolder(node)
  const heldAdmin = (held as { admin?: unknown } | null)?.admin
  const admin = heldAdmin ?? { listen: new URL(node.target.url).host, config: { persist: false } }
  // The admin block goes in after the rewrites: it is the node's own already.
  const { admin: _shared, ...rest } = config
  const text = toNodeText(node, JSON.stringify(rest))
  return `${text.slice(0, -1)}${text.length > 2 ? ',' : ''}"admin":${JSON.stringify(admin)}}`
}

async function _readBuildOnce(node: ProxyNode): Promise<void> {
  if (!nodeState(node).caddy_build) proxySync.nodeBuildRead(node, await readProxyBuild(node.target))
}

export interface RolloutOutcome {
  /** The outcome for the reconciler: the canary's, or the refusal that stopped the roll. */
  result: LoadResult
  /** Nodes that did not answer (they are healed later). */
  warnings: string[]
  /** nodeConfigHash of what was rolled out (warm-up routes do not count). */
  nodeHash: string
}

/**
 * Pushes `configJson` to every enabled node, canary first; see the module comment.
 * `exec`: the mutation's transaction (the node list as it sees it).
 */
export async function rollOut(
  exec: Executor,
  configJson: string,
  opts: { force?: boolean; nodeHash?: string } = {},
): Promise<RolloutOutcome> {
  const nodes = await readRolloutNodes(exec)
  const [canary, ...others] = nodes as [ProxyNode, ...ProxyNode[]]
  // `opts.nodeHash`: the caller's nodeConfigHash of this configuration (nodeConfigHashOfText), or it is made here.
  const hash = opts.nodeHash ?? nodeConfigHash(JSON.parse(configJson))
  const redact = (text: string) => redactSecrets(text, { exec })
  if (!others.length) {
    const result = await loadProxyConfig(canary.target, configJson, opts)
    // The proxy's words can quote the configuration's credentials: redacted before the node's status keeps them.
    const error = _errorOf(result)
    proxySync.nodePushed(canary, result.outcome, hash, error === null ? null : await redact(error))
    if (result.outcome === 'applied') void _readBuildOnce(canary)
    return { result, warnings: [], nodeHash: hash }
  }

  const config = JSON.parse(configJson) as Record<string, unknown>
  const pushed: Array<{ node: ProxyNode; previous: unknown }> = []
  const warnings: string[] = []
  let canaryResult: LoadResult = { outcome: 'applied' }
  for (const node of nodes) {
    const held = await readHeldConfig(_nodeSlot(node), node.target, { timeoutMs: 5_000 }, (c) => nodeConfigHash(c, node))
    if (!held.ok) {
      const error = await redact(held.error)
      proxySync.nodePushed(node, 'unreachable', hash, error)
      if (node.id === CANARY_NODE_ID) canaryResult = { outcome: 'unreachable', error }
      else warnings.push(`node ${node.name} did not answer (${error}): it gets this configuration when it answers again`)
      continue
    }
    if (node.id !== CANARY_NODE_ID && !opts.force && held.hash === hash) {
      proxySync.nodePushed(node, 'unchanged', hash, null)
      continue
    }
    const result = await loadProxyConfig(node.target, _bodyFor(node, config, configJson, held.config), opts)
    if (result.outcome === 'applied') {
      proxySync.nodePushed(node, 'applied', hash, null)
      void _readBuildOnce(node)
      pushed.push({ node, previous: held.config })
      continue
    }
    if (result.outcome === 'unreachable') {
      const error = await redact(result.error)
      proxySync.nodePushed(node, 'unreachable', hash, error)
      if (node.id === CANARY_NODE_ID) canaryResult = { outcome: 'unreachable', error }
      else warnings.push(`node ${node.name} did not answer (${error}): it gets this configuration when it answers again`)
      continue
    }
    const proxyError = await redact(result.proxyError)
    proxySync.nodePushed(node, 'rejected', hash, proxyError)
    const restored = await _restore(pushed, redact)
    const role = node.id === CANARY_NODE_ID ? ' (the canary)' : ''
    return {
      result: { outcome: 'rejected', proxyError: `node ${node.name}${role} refused the configuration: ${proxyError}${restored}` },
      warnings,
      nodeHash: hash,
    }
  }
  return { result: canaryResult, warnings, nodeHash: hash }
}

function _errorOf(result: LoadResult): string | null {
  return result.outcome === 'rejected' ? result.proxyError : result.outcome === 'unreachable' ? result.error : null
}

/** Puts back what each pushed node held before the roll, last pushed first; says what happened. */
async function _restore(pushed: Array<{ node: ProxyNode; previous: unknown }>, redact: (t: string) => Promise<string>): Promise<string> {
  if (!pushed.length) return ''
  const restored: string[] = []
  const failed: string[] = []
  for (const { node, previous } of pushed.reverse()) {
    // A node that held nothing gets nothing back but its admin block.
    const body = previous ?? { admin: { listen: new URL(node.target.url).host, config: { persist: false } } }
    const result = await loadProxyConfig(node.target, JSON.stringify(body), { force: true })
    if (result.outcome === 'applied') {
      proxySync.nodePushed(node, 'restored', nodeConfigHash(previous, node), null)
      restored.push(node.name)
    } else {
      const error = await redact(_errorOf(result) ?? '')
      proxySync.nodePushed(node, 'restore-failed', null, error)
      failed.push(`${node.name} (${error})`)
      logger.error(`rollout: restoring node ${node.name} failed: ${error}`)
    }
  }
  return (
    (restored.length ? `; restored the previous configuration on ${restored.join(', ')}` : '') +
    (failed.length ? `; could not restore ${failed.join(', ')}: the reconcile loop pushes the current configuration to them` : '')
  )
}

/**
 * The loop's look at every node but the canary (which the reconciler checks):
 * a node holding another configuration than the one last pushed (it was down,
 * restarted, or was just added) gets it, one node at a time in the write queue.
 * `committedHash`: the hash the database says the proxy holds (read through
 * the executor given); nothing is pushed unless the remembered configuration is
 * that one, checked again inside the write queue, where a mutation that pushed
 * meanwhile has committed (its roll already reached this node).
 */
export async function healNodes(committedHash: (exec: Executor) => Promise<string | null>): Promise<void> {
  const nodes = (await readRolloutNodes(getDb())).filter((n) => n.id !== CANARY_NODE_ID)
  proxySync.keepNodes(new Set([CANARY_NODE_ID, ...nodes.map((n) => n.id)]))
  for (const node of nodes) {
    const held = await readHeldConfig(_nodeSlot(node), node.target, { timeoutMs: 2_000 }, (c) => nodeConfigHash(c, node))
    if (!held.ok) {
      proxySync.nodeLooked(node, false, await redactSecrets(held.error))
      continue
    }
    const heldHash = held.hash
    proxySync.nodeLooked(node, true, null, heldHash)
    void _readBuildOnce(node)
    const wanted = lastPushed()
    if (!wanted || wanted.hash !== (await committedHash(getDb()))) continue
    const hash = wanted.nodeHash
    if (heldHash === hash || nodeState(node).refusedHash === hash) continue
    const config = JSON.parse(wanted.json) as Record<string, unknown>
    await writeTransaction(async (tx) => {
      if (lastPushed() !== wanted || wanted.hash !== (await committedHash(tx))) return
      const result = await loadProxyConfig(node.target, _bodyFor(node, config, wanted.json, held.config))
      const error = result.outcome === 'applied' ? null : await redactSecrets(_errorOf(result) ?? '', { exec: tx })
      proxySync.nodePushed(node, result.outcome, hash, error)
      if (result.outcome === 'rejected') logger.warn(`node ${node.name} refused the current configuration: ${error}`)
      if (result.outcome !== 'unreachable')
        await writeAudit(
          _HEAL_ACTOR,
          'proxy_node_heal',
          { node_id: node.id, node: node.name, config_hash: hash.slice(0, 16), result: result.outcome, ...(error ? { error } : {}) },
          tx,
        )
      if (result.outcome === 'applied') logger.info(`node ${node.name} held another configuration: pushed the current one`)
    })
  }
}
