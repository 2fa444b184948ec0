import { defineEventHandler, getCookie } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { totpCodeBody } from '~/server/utils/auth/schemas'
import { completeTotpLogin } from '~/server/utils/auth/totp'
import { TOTP_PENDING_COOKIE, clearTotpPendingCookie } from '~/server/utils/auth/cookie'
import { issueSessionCookie } from '~/server/utils/auth/issue'

// Second step of a password login for an account with TOTP: {code} + the pending cookie.
export default defineEventHandler(async (event) => {
  const { code } = await readValidatedJson(event, totpCodeBody)
  const { user, token } = await completeTotpLogin(getCookie(event, TOTP_PENDING_COOKIE), code, auditContextOf(event))
  clearTotpPendingCookie(event)
  await issueSessionCookie(event, token)
  return { user }
})
