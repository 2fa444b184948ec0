import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { logger } from '../utils/core/log'
import { startIngester, stopIngester } from '../utils/logs/ingester'
import { onAuditRow } from '../utils/core/audit'
import { registerBackupHealth } from '../utils/ops/backups'
import { publishLogRows } from '../utils/logs/hub'
import { presentLog } from '../utils/logs/present'

// Log ingestion and the live tail's feed of audit rows; the retention sweep once at boot
// (and every 6 h from nitro.config.ts scheduledTasks).
export default defineNitroPlugin((nitroApp) => {
  onAuditRow((row) => publishLogRows([presentLog(row)]))
  registerBackupHealth()
  whenBootReady().then(() => {
    startIngester()
    runTask('logs:prune', { payload: {} }).catch((err) => logger.error(`retention sweep at boot: ${(err as Error).message}`))
  }, () => {})
  nitroApp.hooks.hook('close', stopIngester)
})
