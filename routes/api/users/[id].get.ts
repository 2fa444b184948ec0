import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getUser } from '~/server/utils/auth/users'

export default defineEventHandler(async (event) => {
  return getUser(parseIdParam(getRouterParam(event, 'id'), 'user id'))
})
