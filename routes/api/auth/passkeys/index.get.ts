import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { listPasskeys } from '~/server/utils/auth/passkeys'

// The caller's own passkeys (names and dates; never key material).
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  return { passkeys: await listPasskeys(user.id) }
})
