import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { logger } from '../utils/core/log'
import { forgetHostNames, startIngester, stopIngester } from '../utils/logs/ingester'
import { onAuditRow } from '../utils/core/audit'
import { registerBackupHealth } from '../utils/ops/backups'
import { publishLogRows } from '../utils/logs/hub'
import { presentLog } from '../utils/logs/present'

// Log ingestion and the live tail's feed of audit rows; the retention sweep once at boot
// (and every 6 h from nitro.config.ts scheduledTasks).
export default defineNitroPlugin((nitroApp) => {
  onAuditRow((row) => {
    publishLogRows([presentLog(row)])
    // Host names changed (after the commit): the ingester's domain -> host cache is stale.
    if (row.message && /^(host_|backup_restore)/.test(row.message)) forgetHostNames()
  })
  registerBackupHealth()
  whenBootReady().then(() => {
    startIngester()
    runTask('logs:prune', { payload: {} }).catch((err) => logger.error(`retention sweep at boot: ${(err as Error).message}`))
  }, () => {})
  nitroApp.hooks.hook('close', stopIngester)
})
