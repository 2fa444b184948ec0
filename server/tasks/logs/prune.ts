import { defineRecordedTask } from '../../utils/core/recorded-task'
import { pruneLogs } from '../../utils/logs/retention'

// Recorded: /api/system/health shows this task's last run and what it returned.
export default defineRecordedTask({
  meta: {
    description:
      'Deletes log rows past logs.retention_days or beyond logs.max_entries, and login attempts older than 24 h; writes an audit row.',
  },
  async run() {
    return pruneLogs()
  },
})
