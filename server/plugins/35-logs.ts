import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { logger } from '../utils/core/log'
import { onAuditRow } from '../utils/core/audit'
import { auditActionRenamesHosts } from '../utils/core/audit-actions'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { forgetHostNames, startIngester, stopIngester } from '../utils/logs/ingester'
import { publishLogRows } from '../utils/logs/hub'
import { presentLog } from '../utils/logs/present'
import { LOOPS, TASKS } from '../utils/core/job-names'

// The logs subsystem: ingestion of the proxy's files, the live tail's feed of
// audit rows, and retention (the sweep once at boot, then every 6 h and the
// monthly vacuum from nitro.config.ts scheduledTasks).
export default defineNitroPlugin((nitroApp) => {
  onAuditRow((row) => {
    publishLogRows([presentLog(row)])
    // Host names changed (after the commit): the ingester's domain -> host cache is stale.
    if (auditActionRenamesHosts(row.message)) forgetHostNames()
  })
  declareBackgroundJob(LOOPS.logsIngest, 'loop')
  declareBackgroundJob(TASKS.logsPrune, 'task')
  declareBackgroundJob(TASKS.logsVacuum, 'task')
  whenBootReady().then(
    () => {
      startIngester()
      runTask(TASKS.logsPrune, { payload: {} }).catch((err) => logger.error(`retention sweep at boot: ${(err as Error).message}`))
    },
    () => {},
  )
  nitroApp.hooks.hook('close', stopIngester)
})
