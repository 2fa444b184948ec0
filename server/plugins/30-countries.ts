import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { getConfig } from '../utils/core/config'
import { logger } from '../utils/core/log'
import { failJobsOfPreviousInstances, reconcileCountryBans } from '../utils/security/countries'
import { geoFileMissing } from '../utils/geo/refresh'

// Boot: jobs of a previous process fail with "panel restarted"; a missing
// geolocation file is fetched in the background; the country reconciler ticks.
export default defineNitroPlugin((nitroApp) => {
  let timer: NodeJS.Timeout | undefined
  whenBootReady().then(async () => {
    const failed = await failJobsOfPreviousInstances()
    if (failed) logger.warn(`${failed} country expansion job(s) of a previous panel process marked failed (panel restarted)`)
    if (geoFileMissing()) runTask('geoip:refresh').catch((err) => logger.warn(`first geolocation download: ${(err as Error).message}`))
    const tick = () => reconcileCountryBans().catch((err) => logger.warn(`country reconciler: ${(err as Error).message}`))
      .finally(() => { timer = setTimeout(tick, getConfig().countryReconcileSeconds * 1000) })
    timer = setTimeout(tick, getConfig().countryReconcileSeconds * 1000)
  }, () => {})
  nitroApp.hooks.hook('close', () => { if (timer) clearTimeout(timer) })
})
