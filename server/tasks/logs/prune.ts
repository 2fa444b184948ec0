import { defineTask } from 'nitropack/runtime'
import { pruneLogs } from '../../utils/logs/retention'

export default defineTask({
  meta: { description: 'Deletes log rows past logs.retention_days or beyond logs.max_entries, and login attempts older than 24 h; writes an audit row.' },
  async run() { return { result: await pruneLogs() } },
})
