import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { loginBody } from '~/server/utils/auth/schemas'
import { loginWithPassword } from '~/server/utils/auth/login'
import { setSessionCookie } from '~/server/utils/auth/cookie'

export default defineEventHandler(async (event) => {
  const { email, password } = await readValidatedJson(event, loginBody)
  const { user, token } = await loginWithPassword(email, password, auditContextOf(event))
  setSessionCookie(event, token)
  return { user }
})
