import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { readValidatedJson } from '~/server/utils/core/validate'
import { totpCodeBody } from '~/server/utils/auth/schemas'
import { regenerateRecoveryCodes } from '~/server/utils/auth/totp'

// A new set of recovery codes (the previous set stops working); needs a code from the device.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  const { code } = await readValidatedJson(event, totpCodeBody)
  return { recovery_codes: await regenerateRecoveryCodes(user.id, code, auditContextOf(event)) }
})
