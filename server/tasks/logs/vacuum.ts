import { defineRecordedTask } from '../../utils/core/recorded-task'
import { vacuumDatabase } from '../../utils/logs/retention'

// Recorded: /api/system/health shows this task's last run and what it returned.
export default defineRecordedTask({
  meta: { description: 'Compacts the database file (monthly).' },
  async run() {
    await vacuumDatabase()
    return 'ok'
  },
})
