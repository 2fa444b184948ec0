import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'

export default defineEventHandler((event) => {
  const { user, expiresAtMs } = requireSession(event)
  return { user, expires_at: new Date(expiresAtMs).toISOString() }
})
