import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { setupBody } from '~/server/utils/auth/schemas'
import { setupFirstAdmin } from '~/server/utils/auth/login'
import { setSessionCookie } from '~/server/utils/auth/cookie'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, setupBody)
  const { user, token } = await setupFirstAdmin(body, auditContextOf(event))
  setSessionCookie(event, token)
  setResponseStatus(event, 201)
  return user
})
