import { defineTask } from 'nitropack/runtime'
import { whenBootReady } from '../../utils/core/boot'
import { backupSchedulerTick } from '../../utils/ops/backups'

export default defineTask({
  meta: { description: 'Takes a scheduled backup when backup.schedule fell due since the last tick, then expires old ones.' },
  async run() {
    await whenBootReady()
    return { result: { ran: await backupSchedulerTick() } }
  },
})
