import { defineEventHandler } from 'h3'
import { requireAdmin } from '~/server/utils/auth/access'
import { listUsers } from '~/server/utils/auth/users'

export default defineEventHandler(async (event) => {
  requireAdmin(event)
  return listUsers()
})
