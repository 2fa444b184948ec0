import { defineNitroPlugin } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { startEngineProbe, stopEngineProbe } from '../utils/security/engine-health'
import { startDriftDetector, stopDriftDetector } from '../utils/security/drift'
import { syncWhitelistFile } from '../utils/security/whitelist'
import { applyScenarioOverrides } from '../utils/security/scenarios'
import { writeAppsecPlugin } from '../utils/security/appsec'
import { syncTrueDetectProfiles } from '../utils/security/profiles'
import { logger } from '../utils/core/log'

// At boot the engine's files are re-derived from the database, then watched.
async function _applyStoredEngineState() {
  for (const [what, step] of [['whitelist', syncWhitelistFile], ['scenarios', () => applyScenarioOverrides()], ['appsec tuning', writeAppsecPlugin], ['profiles', syncTrueDetectProfiles]] as const) {
    try { await step() } catch (err) { logger.error(`applying the stored ${what} to the engine's files failed: ${(err as Error).message}`) }
  }
}

export default defineNitroPlugin((nitroApp) => {
  whenBootReady().then(async () => {
    startEngineProbe()
    await _applyStoredEngineState()
    startDriftDetector()
  }, () => {})
  nitroApp.hooks.hook('close', () => { stopEngineProbe(); stopDriftDetector() })
})
