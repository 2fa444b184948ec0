import { defineNitroPlugin, runTask } from 'nitropack/runtime'
import { whenBootReady } from '../utils/core/boot'
import { logger } from '../utils/core/log'
import { declareBackgroundJob } from '../utils/core/runtime-state'
import { warmPasswordDecoy } from '../utils/auth/passwords'
import { onSettingsCommit } from '../utils/core/settings'
import { onStrictSessionsCommit } from '../utils/auth/strict-mode'
import { TASKS } from '../utils/core/job-names'

// The auth sweep once at boot (then every 10 minutes from nitro.config.ts
// scheduledTasks), and the decoy password hash computed before the first login.
export default defineNitroPlugin(() => {
  declareBackgroundJob(TASKS.authSweep, 'task')
  // Strict session mode: a switch ends every session, and the in-memory mode follows the commit.
  onSettingsCommit(onStrictSessionsCommit)
  warmPasswordDecoy().catch(() => {})
  whenBootReady().then(
    () => {
      runTask(TASKS.authSweep, { payload: {} }).catch((err) => logger.error(`auth sweep at boot: ${(err as Error).message}`))
    },
    () => {},
  )
})
