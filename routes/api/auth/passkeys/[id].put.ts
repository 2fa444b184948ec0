import { defineEventHandler, getRouterParam } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { passkeyRenameBody } from '~/server/utils/auth/schemas'
import { renamePasskey } from '~/server/utils/auth/passkeys'

export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  const id = parseIdParam(getRouterParam(event, 'id'), 'passkey id')
  const { name } = await readValidatedJson(event, passkeyRenameBody)
  return renamePasskey(user.id, id, name, auditContextOf(event))
})
