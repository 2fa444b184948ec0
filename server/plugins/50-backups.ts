import { defineNitroPlugin } from 'nitropack/runtime'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { registerSystemHealthSection } from '../utils/ops/health'
import { lastBackup } from '../utils/ops/backups'
import { TASKS } from '../utils/core/job-names'

// Backups: the scheduler ticks from nitro.config.ts scheduledTasks (backups:tick
// reads backup.schedule each time); health shows the last backup.
export default defineNitroPlugin(() => {
  registerSystemHealthSection('scheduler', lastBackup)
  declareBackgroundJob(TASKS.backupsTick, 'task')
})
