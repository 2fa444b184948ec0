import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { revokeApiToken } from '~/server/utils/auth/api-tokens'
import { auditContextOf } from '~/server/utils/core/audit'
import { parseIdParam } from '~/server/utils/core/validate'

// Revocation by the owner or an admin; effective on the next request (tokens are not cached).
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  await revokeApiToken(parseIdParam(getRouterParam(event, 'id'), 'token id'), user, auditContextOf(event))
  return sendNoContent(event)
})
