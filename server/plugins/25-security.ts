import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { startEngineProbe, stopEngineProbe } from '../utils/security/engine-health'
import { startDriftDetector, stopDriftDetector } from '../utils/security/drift'
import { startDecisionMirror, stopDecisionMirror } from '../utils/security/mirror'

// At boot the engine's files are re-derived from the database by the drift
// detector's first check (each re-application audited), then checked every interval.
export default defineNitroPlugin((nitroApp) => {
  whenBootReady().then(() => {
    startEngineProbe()
    startDecisionMirror()
    startDriftDetector()
  }, () => {})
  nitroApp.hooks.hook('close', () => { stopEngineProbe(); stopDecisionMirror(); stopDriftDetector() })
})
