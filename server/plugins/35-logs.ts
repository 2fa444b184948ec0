import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { logger } from '../utils/core/log'
import { startIngester, stopIngester } from '../utils/logs/ingester'

export default defineNitroPlugin((nitroApp) => {
  whenBootReady().then(() => {
    startIngester()
    runTask('logs:prune').catch((err) => logger.error(`retention sweep at boot: ${(err as Error).message}`))
  }, () => {})
  nitroApp.hooks.hook('close', stopIngester)
})
