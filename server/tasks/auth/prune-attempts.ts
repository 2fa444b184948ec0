import { defineTask } from 'nitropack/runtime'
import { runWrite, getDb } from '../../utils/core/db'
import { whenBootReady } from '../../utils/core/boot'
import { deleteLoginAttemptsOlderThan } from '../../utils/auth/attempts'

// Login attempts matter only for the 15-minute throttle window; a day is kept for audits.
export default defineTask({
  meta: { description: 'Drops login attempt rows older than 24 hours.' },
  async run() {
    await whenBootReady()
    await runWrite(() => deleteLoginAttemptsOlderThan(getDb(), Date.now() - 24 * 3600_000))
    return { result: 'ok' }
  },
})
