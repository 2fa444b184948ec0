import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { loginBody } from '~/server/utils/auth/schemas'
import { loginWithPassword } from '~/server/utils/auth/login'
import { setTotpPendingCookie } from '~/server/utils/auth/cookie'
import { issueSessionCookie } from '~/server/utils/auth/issue'

export default defineEventHandler(async (event) => {
  const { email, password } = await readValidatedJson(event, loginBody)
  const result = await loginWithPassword(email, password, auditContextOf(event))
  if (result.totpPending) {
    setTotpPendingCookie(event, result.pendingToken)
    return { totp_pending: true }
  }
  await issueSessionCookie(event, result.token)
  return { user: result.user }
})
