import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { readValidatedJson } from '~/server/utils/core/validate'
import { totpCodeBody } from '~/server/utils/auth/schemas'
import { disableTotp } from '~/server/utils/auth/totp'
import { issueSessionCookie } from '~/server/utils/auth/issue'

// TOTP off with a current code or an unused recovery code; the user's sessions rotate.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  const { code } = await readValidatedJson(event, totpCodeBody)
  const { session } = await disableTotp(user.id, code, auditContextOf(event))
  await issueSessionCookie(event, session.token)
  return { totp_enabled: false }
})
