import { defineRecordedTask } from '../../utils/core/recorded-task'
import { whenBootReady } from '../../utils/core/boot'
import { backupSchedulerTick } from '../../utils/ops/backups'

// Recorded: /api/system/health shows this task's last run and what it returned.
export default defineRecordedTask({
  meta: { description: 'Takes a scheduled backup when backup.schedule fell due since the last tick, then expires old ones.' },
  async run() {
    await whenBootReady()
    return { ran: await backupSchedulerTick() }
  },
})
