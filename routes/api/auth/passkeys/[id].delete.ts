import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { parseIdParam } from '~/server/utils/core/validate'
import { deletePasskey } from '~/server/utils/auth/passkeys'

// The key stops signing in at once: every login looks the credential up in the table.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  await deletePasskey(user.id, parseIdParam(getRouterParam(event, 'id'), 'passkey id'), auditContextOf(event))
  return sendNoContent(event)
})
