import { defineEventHandler, getRouterParam } from 'h3'
import { requireAdmin } from '~/server/utils/auth/access'
import { parseIdParam } from '~/server/utils/core/validate'
import { getUser } from '~/server/utils/auth/users'

export default defineEventHandler(async (event) => {
  requireAdmin(event)
  return getUser(parseIdParam(getRouterParam(event, 'id'), 'user id'))
})
