import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { registerSystemHealthSection } from '../utils/ops/health'
import type { Loop } from '../utils/core/background'
import { securityEngineHealth, startEngineProbe } from '../utils/security/engine-health'
import { startDriftDetector } from '../utils/security/drift'
import { mirrorEnabled, mirrorHealth, startDecisionMirror } from '../utils/security/mirror'
import { LOOPS } from '../utils/core/job-names'

// The security engine subsystem: the reachability probe, the decision mirror and
// the drift detector, with their health sections. At boot the engine's files are
// re-derived from the database by the drift detector's first check (each
// re-application audited), then checked every interval.
export default defineNitroPlugin((nitroApp) => {
  const loops: Array<Loop | undefined> = []
  registerSystemHealthSection('security_engine', securityEngineHealth)
  registerSystemHealthSection('decision_mirror', mirrorHealth)
  declareBackgroundJob(LOOPS.securityEngineProbe, 'loop')
  declareBackgroundJob(LOOPS.securityDrift, 'loop')
  whenBootReady().then(
    () => {
      // Without the panel's own bouncer key there is no mirror (and no loop to show).
      if (mirrorEnabled()) declareBackgroundJob(LOOPS.securityDecisionMirror, 'loop')
      loops.push(startEngineProbe(), startDecisionMirror(), startDriftDetector())
    },
    () => {},
  )
  nitroApp.hooks.hook('close', () => Promise.all(loops.map((loop) => loop?.stop())).then(() => {}))
})
