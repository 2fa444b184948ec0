import { defineTask } from 'nitropack/runtime'
import { whenBootReady } from '../../utils/core/boot'
import { sweepAuthState } from '../../utils/auth/sweep'

export default defineTask({
  meta: { description: 'Deletes expired sessions, expired OIDC pending states and TOTP pending logins, and login/TOTP attempts older than 24 hours.' },
  async run() {
    await whenBootReady()
    return { result: await sweepAuthState() }
  },
})
