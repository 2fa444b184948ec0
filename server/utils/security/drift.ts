import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { appsecDrift } from './appsec'
import { scenarioDrift } from './scenarios'

// Compares what is on the engine's disk with what the panel stored, every
// PANEL_DRIFT_INTERVAL_SECONDS (60 by default).

interface DriftPart { drift_detected: boolean; checked_at: string | null; details: string[] }
const _empty = (): DriftPart => ({ drift_detected: false, checked_at: null, details: [] })
let _state = { scenarios: _empty(), appsec: _empty() }
let _timer: NodeJS.Timeout | undefined

export async function checkDrift(): Promise<typeof _state> {
  const at = new Date().toISOString()
  const [scenarios, appsec] = await Promise.all([scenarioDrift(), appsecDrift()])
  _state = {
    scenarios: { drift_detected: scenarios.length > 0, checked_at: at, details: scenarios },
    appsec: { drift_detected: appsec.length > 0, checked_at: at, details: appsec },
  }
  return _state
}

export function readDrift() {
  return _state
}

export function startDriftDetector(): void {
  const tick = () => checkDrift().catch((err) => logger.error(`drift detector: ${(err as Error).message}`))
    .finally(() => { _timer = setTimeout(tick, getConfig().driftIntervalSeconds * 1000) })
  tick()
}

export function stopDriftDetector(): void {
  if (_timer) clearTimeout(_timer)
}
