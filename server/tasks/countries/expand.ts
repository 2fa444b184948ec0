import { defineRecordedTask } from '../../utils/core/recorded-task'
import { runPendingJobs } from '../../utils/security/countries'

// Recorded: /api/system/health shows this task's last run and what it returned.
export default defineRecordedTask({
  meta: { description: 'Runs pending country-ban expansion jobs, one at a time, under the global worker lease.' },
  async run() {
    return { jobs_run: await runPendingJobs() }
  },
})
