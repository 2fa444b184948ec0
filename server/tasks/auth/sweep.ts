import { defineRecordedTask } from '../../utils/core/recorded-task'
import { whenBootReady } from '../../utils/core/boot'
import { sweepAuthState } from '../../utils/auth/sweep'

// Recorded: /api/system/health shows this task's last run and what it returned.
export default defineRecordedTask({
  meta: {
    description:
      'Deletes expired sessions, expired OIDC pending states and TOTP pending logins, and login/TOTP attempts older than 24 hours.',
  },
  async run() {
    await whenBootReady()
    return await sweepAuthState()
  },
})
