import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'

// With an API token: its expiry (null when it has none) and which token it is.
export default defineEventHandler((event) => {
  const { user, expiresAtMs, apiToken } = requireSession(event)
  return {
    user,
    expires_at: Number.isFinite(expiresAtMs) ? new Date(expiresAtMs).toISOString() : null,
    ...(apiToken ? { api_token: apiToken } : {}),
  }
})
