import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { readValidatedJson } from '~/server/utils/core/validate'
import { emptyBody } from '~/server/utils/auth/schemas'
import { beginTotpSetup } from '~/server/utils/auth/totp'

// A new secret and its otpauth:// URI (for a QR code); TOTP is not active until enabled with a code.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  await readValidatedJson(event, emptyBody)
  return beginTotpSetup(user.id, auditContextOf(event))
})
