import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { startLoop, type Loop } from '../utils/core/background'
import { getConfig } from '../utils/core/config'
import { logger } from '../utils/core/log'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { failJobsOfPreviousInstances, reconcileCountryBans } from '../utils/security/countries'
import { geoFileMissing } from '../utils/geo/refresh'
import { LOOPS, TASKS } from '../utils/core/job-names'

// Country bans and geolocation. Boot: jobs of a previous process fail with
// "panel restarted"; a missing geolocation file is fetched in the background;
// the country reconciler compares the engine with the stored bans every interval.
export default defineNitroPlugin((nitroApp) => {
  let loop: Loop | undefined
  declareBackgroundJob(TASKS.countriesExpand, 'task')
  declareBackgroundJob(TASKS.geoipRefresh, 'task')
  declareBackgroundJob(LOOPS.countriesReconcile, 'loop')
  whenBootReady().then(
    async () => {
      const failed = await failJobsOfPreviousInstances()
      if (failed) logger.warn(`${failed} country expansion job(s) of a previous panel process marked failed (panel restarted)`)
      if (geoFileMissing()) runTask(TASKS.geoipRefresh).catch((err) => logger.warn(`first geolocation download: ${(err as Error).message}`))
      const intervalMs = () => getConfig().countryReconcileSeconds * 1000
      loop = startLoop(LOOPS.countriesReconcile, {
        run: reconcileCountryBans,
        nextDelayMs: intervalMs,
        firstDelayMs: intervalMs(),
        onFailure: (err) => logger.warn(`country reconciler: ${(err as Error).message}`),
      })
    },
    () => {},
  )
  nitroApp.hooks.hook('close', () => loop?.stop())
})
