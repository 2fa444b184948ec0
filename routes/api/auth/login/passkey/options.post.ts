import { defineEventHandler, getCookie } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { emptyBody } from '~/server/utils/auth/schemas'
import { beginPasskeySecondFactor } from '~/server/utils/auth/passkeys'
import { TOTP_PENDING_COOKIE } from '~/server/utils/auth/cookie'

// Second login step with a passkey instead of a TOTP code: options for the pending login's user's keys.
export default defineEventHandler(async (event) => {
  await readValidatedJson(event, emptyBody)
  return beginPasskeySecondFactor(getCookie(event, TOTP_PENDING_COOKIE))
})
