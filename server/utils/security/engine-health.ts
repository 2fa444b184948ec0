import { writeAudit, systemActor } from '../core/audit'
import { logger } from '../core/log'
import { emitPanelEvent } from '../ops/events'
import { registerSystemHealthSection } from '../ops/health'
import { probeEngine } from './lapi'
import { redactSecrets } from '../core/redact'

const _PROBE_EVERY_MS = 10_000

let _state: { reachable: boolean | null; checked_at: string | null; since: string | null; error: string | null } = { reachable: null, checked_at: null, since: null, error: null }
let _timer: NodeJS.Timeout | undefined

export function securityEngineHealth() {
  return { ..._state }
}

/** One probe; a change of state is logged, audited and emitted (security_engine_down). */
export async function probeSecurityEngine(): Promise<void> {
  const probe = await probeEngine()
  const up = probe.up
  const error = probe.error && await redactSecrets(probe.error)
  const now = new Date().toISOString()
  const changed = _state.reachable !== up
  _state = { reachable: up, checked_at: now, since: changed ? now : _state.since, error }
  if (!changed) return
  if (up) {
    logger.info('security engine reachable')
    await writeAudit(systemActor('engine-probe'), 'security_engine_up', {})
  } else {
    logger.warn(`security engine down: ${error}`)
    await writeAudit(systemActor('engine-probe'), 'security_engine_down', { error })
    emitPanelEvent('security_engine_down', { error })
  }
}

export function startEngineProbe(): void {
  registerSystemHealthSection('security_engine', securityEngineHealth)
  const tick = () => probeSecurityEngine().catch((err) => logger.error(`engine probe: ${(err as Error).message}`)).finally(() => { _timer = setTimeout(tick, _PROBE_EVERY_MS) })
  tick()
}

export function stopEngineProbe(): void {
  if (_timer) clearTimeout(_timer)
}
