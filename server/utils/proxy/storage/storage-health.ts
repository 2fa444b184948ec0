import { getConfig } from '../../core/config'
import { getDb } from '../../core/db'
import { logger } from '../../core/log'
import { redactSecrets } from '../../core/redact'
import { readNodeStorageHealth } from '../nodes/client'
import { readRolloutNodes, type ProxyNode } from '../nodes/node-records'
import { nodeStorageStatus, proxySync } from '../sync/state'
import type { NodeStorageStatus } from './schemas'

// Each node's certificate storage, as its own admin API says (GET /panel/storage/health:
// a probe key written, read and deleted). Looked at by the reconcile loop's node look,
// at most every 10 s per node (each look is a round trip to the storage from every
// node), kept in memory with the node's status (sync/state.ts).

export const STORAGE_LOOK_EVERY_MS = 10_000
// Longer than the node's own probe (3 s, storageext/admin.go): a storage that hangs rather
// than fails is answered by the node as failing before the panel gives up on the node.
const _LOOK_TIMEOUT_MS = 6_000

const _lastLookMs = new Map<number, number>()
let _looking: Promise<void> | undefined

async function _look(node: ProxyNode): Promise<NodeStorageStatus> {
  const checked_at = new Date().toISOString()
  const r = await readNodeStorageHealth(node.target, { timeoutMs: _LOOK_TIMEOUT_MS })
  if (r.outcome === 'answered') {
    const h = r.health
    // The module never words a credential; its text is the storage's, redacted as every text from the proxy.
    const error = h.ok ? null : await redactSecrets(h.error ?? 'the storage failed its probe (no reason given)')
    return { module: h.module, ok: h.ok, error, latency_ms: h.latency_ms, checked_at }
  }
  // A build without the module: nothing to look at and nothing wrong.
  if (r.outcome === 'absent') return { module: null, ok: null, error: null, latency_ms: null, checked_at }
  // The node itself does not answer (its own problem says so) or does not let the panel ask: not known.
  return { module: nodeStorageStatus(node.id).module, ok: null, error: await redactSecrets(r.error), latency_ms: null, checked_at }
}

async function _lookDue(): Promise<void> {
  const nodes = await readRolloutNodes(getDb())
  const now = Date.now()
  const due = nodes.filter((n) => now - (_lastLookMs.get(n.id) ?? 0) >= STORAGE_LOOK_EVERY_MS)
  for (const n of due) _lastLookMs.set(n.id, now)
  await Promise.all(due.map(async (n) => proxySync.nodeStorageLooked(n, await _look(n))))
}

/**
 * The loop's look (sync/loop.ts), in the background: a slow storage never holds back a
 * push. One look at a time; a build without the module (PROXY_MODULES) is never asked.
 */
export function lookAtNodeStorages(): void {
  if (_looking || !getConfig().proxy.modules.includes('storage')) return
  _looking = _lookDue()
    .catch((err) => logger.warn(`looking at the proxy nodes' certificate storage failed: ${(err as Error).message}`))
    .finally(() => {
      _looking = undefined
    })
}
