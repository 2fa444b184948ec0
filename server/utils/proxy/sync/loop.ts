import { logger } from '../../core/log'
import { createCoalescedRunner } from '../../core/coalesce'
import { emitPanelEvent } from '../../ops/events'
import { settingAffectsProxy } from '../../core/settings'
import { recordRun, startLoop, type Loop } from '../../core/background'
import { runWrite, type Tx } from '../../core/db'
import type { AuditContext } from '../../core/audit'
import { probeEngine } from '../../security/lapi'
import { healNodes, noteCanaryHeld } from '../nodes/rollout'
import { lookAtNodeStorages } from '../storage/storage-health'
import { ENGINE_PROBE_TIMEOUT_MS, readCanaryHeld, readReconcileState, reconcileInTransaction, reconcileNow } from './reconcile'
import { lastAttempt, proxyReachable, proxySync, syncFlags, type SyncOutcome } from './state'

const _BASE_INTERVAL_MS = 2_000
const _MAX_INTERVAL_MS = 5_000
/** Background triggers this close together give one compare-and-push. */
const _DEBOUNCE_MS = 250

/**
 * Every background push (the loop's drift check, a pending retry, a deferred
 * push once the engine answers) goes through this one debounced, single-flight
 * runner; mutations push inside their own transactions, and both meet in the
 * write queue (reconcileTick decides inside it).
 */
export const requestBackgroundReconcile = createCoalescedRunner(reconcileTick, _DEBOUNCE_MS)

// The loop's own bookkeeping (its timer and back-off); the pipeline's state is state.ts.
let _loop: Loop | undefined
let _stopped = false
let _interval = _BASE_INTERVAL_MS

export async function readProxyHealth() {
  const state = await readReconcileState()
  const attempt = lastAttempt()
  return {
    reachable: proxyReachable(),
    last_reconcile_at: state.last_reconcile_at,
    last_reconcile_status: attempt?.outcome === 'rejected' ? ('rejected' as const) : state.last_reconcile_status,
    last_error: attempt?.outcome === 'rejected' ? attempt.error : state.last_error,
    warnings: state.warnings,
  }
}

/** Whether a push is due, against the committed state; `reason` when it is. */
async function _pushDue(): Promise<{ reason: string } | { result: SyncOutcome }> {
  const state = await readReconcileState()
  const flags = syncFlags()
  if (flags.retryRequested || state.last_reconcile_status !== 'ok') {
    // Waiting for the engine: nothing to do (and nothing to record) until it answers.
    if (flags.deferredForEngine && !(await probeEngine({ timeoutMs: ENGINE_PROBE_TIMEOUT_MS })).up) return { result: 'deferred' }
    return {
      reason: flags.deferredForEngine ? 'the security engine answers again: pushing the deferred change' : 'retry of a pending change',
    }
  }
  const held = await readCanaryHeld()
  const heldHash = held.ok ? held.hash : null
  noteCanaryHeld(held)
  if (!held.ok) return { result: 'unreachable' }
  if (heldHash === null || heldHash !== state.pushed_hash) return { reason: 'the proxy holds another configuration (restarted?)' }
  // The engine's state decides between the two configurations: back to normal once it
  // answers; to the unreachable-engine one when it stops, if some host must then refuse.
  if (flags.pushedEngineDown || flags.pushedFailClosed) {
    const up = (await probeEngine({ timeoutMs: ENGINE_PROBE_TIMEOUT_MS })).up
    if (flags.pushedEngineDown && up) return { reason: 'the security engine answers again' }
    if (!flags.pushedEngineDown && !up) return { reason: 'the security engine is unreachable: hosts that fail closed refuse' }
  }
  return { result: 'unchanged' }
}

/**
 * One compare-and-push of the loop: retries a pending push, and re-pushes when
 * the proxy holds something other than what was last pushed (it restarted, or
 * someone loaded another configuration). Pushes nothing when nothing changed.
 *
 * The first look runs outside the write queue (cheap, usually "unchanged"); a
 * push is only decided by a second look inside it. There no mutation is in
 * flight, so the committed hash is the one the proxy should hold: a mutation's
 * push that the proxy already holds while its transaction has not committed yet
 * can no longer be mistaken for drift and pushed a second time.
 */
export async function reconcileTick(): Promise<SyncOutcome> {
  const result = await _tickCanary()
  // The other nodes follow the canary: each one that holds another configuration gets the current one.
  if (result === 'unchanged' || result === 'applied') {
    try {
      await healNodes(async (exec) => (await readReconcileState(exec)).pushed_hash)
    } catch (err) {
      logger.warn(`healing proxy nodes failed: ${(err as Error).message}`)
    }
  }
  return result
}

async function _tickCanary(): Promise<SyncOutcome> {
  const first = await _pushDue()
  if ('result' in first) return first.result
  return runWrite(async () => {
    const due = await _pushDue()
    if ('result' in due) return due.result
    proxySync.retryTaken()
    try {
      const outcome = await reconcileNow(due.reason)
      if (outcome.status === 'pending') return outcome.deferred ? 'deferred' : 'unreachable'
      logger.info(`pushed the proxy configuration: ${due.reason}`)
      return 'applied'
    } catch (err) {
      logger.warn(`reconcile failed: ${(err as Error).message}`)
      return 'rejected'
    }
  })
}

/** The loop's check: compare and push when needed; notes whether the proxy answered. */
async function _checkProxy(): Promise<void> {
  const r = await requestBackgroundReconcile()
  // "deferred" says nothing about the proxy: it waits for the engine (checked every tick).
  if (r !== 'deferred') {
    const reachable = r !== 'unreachable'
    if (proxySync.proxyLooked(reachable) === true && !reachable) emitPanelEvent('health_degraded', { component: 'proxy', detail: r })
  }
  _interval = proxyReachable() !== false ? _BASE_INTERVAL_MS : Math.min(_interval * 2, _MAX_INTERVAL_MS)
  // Each node's certificate storage, at most every 10 s per node, beside the push (never holding it back).
  lookAtNodeStorages()
}

/** Pushes when a saved setting changes what the proxy configuration holds (in the settings' transaction). */
export async function reconcileOnSettingsChange(tx: Tx, keys: string[], ctx: AuditContext): Promise<void> {
  if (keys.some(settingAffectsProxy)) await reconcileInTransaction(tx, ctx, `settings changed: ${keys.join(', ')}`)
}

/** Starts the loop: one push at boot, then checks with back-off while the proxy is away. */
export function startReconcileLoop(): void {
  const startChecks = () => {
    if (_stopped) return
    _loop = startLoop('proxy:reconcile', { run: _checkProxy, nextDelayMs: () => _interval, firstDelayMs: _interval })
  }
  recordRun('proxy:boot-push', 'task', () => reconcileNow('boot'))
    .then(
      (o) => {
        if (!o.deferred) proxySync.proxyLooked(o.status === 'applied')
        if (o.status === 'pending') logger.warn(`boot push pending; will retry: ${o.error}`)
      },
      (err) => logger.warn(`boot reconcile failed: ${(err as Error).message}`),
    )
    .finally(startChecks)
}

export async function stopReconcileLoop(): Promise<void> {
  _stopped = true
  await _loop?.stop()
}
