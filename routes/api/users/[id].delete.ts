import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteUser } from '~/server/utils/auth/users'

export default defineEventHandler(async (event) => {
  await deleteUser(parseIdParam(getRouterParam(event, 'id'), 'user id'), auditContextOf(event))
  return sendNoContent(event)
})
