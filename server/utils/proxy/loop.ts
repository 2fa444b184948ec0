import { logger } from '../core/log'
import { emitPanelEvent } from '../ops/events'
import { onSettingsCommit, settingAffectsProxy } from '../core/settings'
import { registerSystemHealthSection } from '../ops/health'
import { lastReconcileAttempt, readReconcileState, reconcileInTransaction, reconcileNow, reconcileTick } from './reconciler'

const _BASE_INTERVAL_MS = 2_000
const _MAX_INTERVAL_MS = 5_000

let _timer: NodeJS.Timeout | undefined
let _stopped = false
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

/** Starts the loop: one push at boot, then checks with back-off while the proxy is away. */
export function startReconcileLoop(): void {
  onSettingsCommit(async (tx, keys, ctx) => {
    if (keys.some(settingAffectsProxy)) await reconcileInTransaction(tx, ctx, `settings changed: ${keys.join(', ')}`)
  })
  registerSystemHealthSection('proxy', readProxyHealth)

  let interval = _BASE_INTERVAL_MS
  const schedule = () => { if (!_stopped) _timer = setTimeout(tick, interval) }
  const tick = async () => {
    try {
      const r = await reconcileTick()
      const reachable = r !== 'unreachable' && r !== 'pending'
      if (_reachable === true && !reachable) emitPanelEvent('health_degraded', { component: 'proxy', detail: r })
      _reachable = reachable
      interval = _reachable ? _BASE_INTERVAL_MS : Math.min(interval * 2, _MAX_INTERVAL_MS)
    } catch (err) {
      logger.error(`reconcile loop: ${(err as Error).message}`)
    }
    schedule()
  }
  reconcileNow('boot').then((o) => {
    _reachable = o.status === 'applied'
    if (o.status === 'pending') logger.warn(`proxy not reachable at boot; will retry: ${o.error}`)
  }, (err) => logger.warn(`boot reconcile failed: ${(err as Error).message}`)).finally(schedule)
}

export function stopReconcileLoop(): void {
  _stopped = true
  if (_timer) clearTimeout(_timer)
}
