import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { readValidatedJson } from '~/server/utils/core/validate'
import { totpCodeBody } from '~/server/utils/auth/schemas'
import { enableTotp } from '~/server/utils/auth/totp'
import { issueSessionCookie } from '~/server/utils/auth/issue'

// TOTP on: the recovery codes are shown this once; every session of the user is replaced by a new one.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  const { code } = await readValidatedJson(event, totpCodeBody)
  const { recovery_codes, session } = await enableTotp(user.id, code, auditContextOf(event))
  await issueSessionCookie(event, session.token)
  return { totp_enabled: true, recovery_codes }
})
