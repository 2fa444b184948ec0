import { logger } from '../../core/log'
import { createCoalescedRunner } from '../../core/coalesce'
import { emitPanelEvent } from '../../ops/events'
import { settingAffectsProxy } from '../../core/settings'
import { recordRun, startLoop, type Loop } from '../../core/background'
import type { Tx } from '../../core/db'
import type { AuditContext } from '../../core/audit'
import { lastReconcileAttempt, readReconcileState, reconcileInTransaction, reconcileNow, reconcileTick } from './reconcile'

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

let _loop: Loop | undefined
let _stopped = false
let _interval = _BASE_INTERVAL_MS
let _reachable: boolean | null = null

/** Whether the last contact with the proxy's admin API worked (null before the first). */
export function proxyReachable(): boolean | null {
  return _reachable
}

export async function readProxyHealth() {
  const state = await readReconcileState()
  const attempt = lastReconcileAttempt()
  return {
    reachable: _reachable,
    last_reconcile_at: state.last_reconcile_at,
    last_reconcile_status: attempt?.status === 'rejected' ? 'rejected' : state.last_reconcile_status,
    last_error: attempt?.status === 'rejected' ? attempt.error : state.last_error,
    warnings: state.warnings,
  }
}

/** The loop's check: compare and push when needed; notes whether the proxy answered. */
async function _checkProxy(): Promise<void> {
  const r = await requestBackgroundReconcile()
  // "deferred" says nothing about the proxy: it waits for the engine (checked every tick).
  if (r !== 'deferred') {
    const reachable = r !== 'unreachable' && r !== 'pending'
    if (_reachable === true && !reachable) emitPanelEvent('health_degraded', { component: 'proxy', detail: r })
    _reachable = reachable
  }
  _interval = _reachable !== false ? _BASE_INTERVAL_MS : Math.min(_interval * 2, _MAX_INTERVAL_MS)
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
        if (!o.deferred) _reachable = o.status === 'applied'
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
