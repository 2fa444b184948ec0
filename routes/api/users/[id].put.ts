import { defineEventHandler, getRouterParam } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { updateUserBody } from '~/server/utils/auth/schemas'
import { updateUser } from '~/server/utils/auth/users'
import { issueSessionCookie } from '~/server/utils/auth/issue'

export default defineEventHandler(async (event) => {
  // Admin only by its declaration (server/utils/openapi/areas/system.ts), enforced by middleware/10-auth.ts.
  const actor = requireSession(event)
  const id = parseIdParam(getRouterParam(event, 'id'), 'user id')
  const body = await readValidatedJson(event, updateUserBody)
  const { user, session } = await updateUser(id, body, auditContextOf(event), actor.user.id)
  // A change of one's own role or password rotates one's own session too.
  if (session) await issueSessionCookie(event, session.token)
  return user
})
