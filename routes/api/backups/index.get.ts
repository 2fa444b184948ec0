import { defineEventHandler } from 'h3'
import { requireAdmin } from '~/server/utils/auth/access'
import { listBackups } from '~/server/utils/ops/backups'

// Admin only: a backup holds every credential hash and sealed secret the API hides (issue 33).
export default defineEventHandler((event) => {
  requireAdmin(event)
  return listBackups()
})
