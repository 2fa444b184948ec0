import { defineEventHandler, getRouterParam } from 'h3'
import { requireAdmin } from '~/server/utils/auth/access'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { updateUserBody } from '~/server/utils/auth/schemas'
import { updateUser } from '~/server/utils/auth/users'

export default defineEventHandler(async (event) => {
  requireAdmin(event)
  const id = parseIdParam(getRouterParam(event, 'id'), 'user id')
  const body = await readValidatedJson(event, updateUserBody)
  return updateUser(id, body, auditContextOf(event))
})
