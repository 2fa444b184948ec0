import { getConfig } from '../core/config'
import { startLoop, type Loop } from '../core/background'
import { logger } from '../core/log'
import { systemActor, writeAudit } from '../core/audit'
import { checkAppsecPlugin } from './appsec'
import { checkScenarios } from './scenarios'
import { checkWhitelistFile } from './whitelist'
import { checkTrueDetectProfiles } from './profiles'
import { withEngineFiles, type SurfaceCheck } from './engine-files'
import { LOOPS } from '../core/job-names'

// Compares what is on the engine's disk with what the panel stored, at boot and
// every PANEL_DRIFT_INTERVAL_SECONDS (60 by default), and re-applies the stored
// state: the engine's own start (hub upgrade, collection install) or a hand edit
// must not undo an operator's choice. Every re-application is one audit row
// (`engine_drift_repair`, actor system:drift). What cannot be repaired stays
// flagged (`drift_detected`, `details`) with what the operator can do.

const _SURFACES = {
  scenarios: checkScenarios,
  whitelist: checkWhitelistFile,
  profiles: checkTrueDetectProfiles,
  appsec: checkAppsecPlugin,
} satisfies Record<string, () => Promise<SurfaceCheck>>
type Surface = keyof typeof _SURFACES

/** Repairs kept per surface for GET /api/security/drift (the audit log keeps every one). */
const _KEEP_REPAIRS = 20

interface Repair {
  at: string
  target: string
  detail: string
}
interface DriftPart {
  drift_detected: boolean
  checked_at: string | null
  details: string[]
  repaired: Repair[]
}
const _empty = (): DriftPart => ({ drift_detected: false, checked_at: null, details: [], repaired: [] })
let _state: Record<Surface, DriftPart> = { scenarios: _empty(), whitelist: _empty(), profiles: _empty(), appsec: _empty() }

export function checkDrift(): Promise<Record<Surface, DriftPart>> {
  return withEngineFiles(async () => {
    const at = new Date().toISOString()
    const next = { ..._state }
    for (const surface of Object.keys(_SURFACES) as Surface[]) {
      let result: SurfaceCheck
      try {
        result = await _SURFACES[surface]()
      } catch (err) {
        result = { repaired: [], remaining: [`the check failed: ${(err as Error).message}`] }
      }
      for (const r of result.repaired) {
        logger.warn(`engine drift repaired (${surface}): ${r.detail}`)
        await writeAudit(systemActor('drift'), 'engine_drift_repair', { surface, target: r.target, repair: r.detail })
      }
      const repaired = [...result.repaired.map((r) => ({ at, ...r })), ..._state[surface].repaired].slice(0, _KEEP_REPAIRS)
      next[surface] = { drift_detected: result.remaining.length > 0, checked_at: at, details: result.remaining, repaired }
    }
    _state = next
    return _state
  })
}

export function readDrift() {
  return _state
}

/** The first check runs at once (boot re-applies the stored state, audited), then every interval. */
export function startDriftDetector(): Loop {
  return startLoop(LOOPS.securityDrift, {
    run: checkDrift,
    nextDelayMs: () => getConfig().driftIntervalSeconds * 1000,
    onFailure: (err) => logger.error(`drift detector: ${(err as Error).message}`),
  })
}
