import { defineTask } from 'nitropack/runtime'
import { runPendingJobs } from '../../utils/security/countries'

export default defineTask({
  meta: { description: 'Runs pending country-ban expansion jobs, one at a time, under the global worker lease.' },
  async run() {
    return { result: { jobs_run: await runPendingJobs() } }
  },
})
