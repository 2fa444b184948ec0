import { defineEventHandler, setResponseStatus } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { createApiTokenBody } from '~/server/utils/auth/schemas'
import { createApiToken } from '~/server/utils/auth/api-tokens'
import { auditContextOf } from '~/server/utils/core/audit'
import { readValidatedJson } from '~/server/utils/core/validate'
import { forbidden } from '~/server/utils/core/errors'

// The secret is in this answer and nowhere else, ever.
export default defineEventHandler(async (event) => {
  const auth = requireSession(event)
  // A leaked token must not be able to mint successors that outlive its revocation.
  if (auth.apiToken) throw forbidden('API tokens are created from a browser session, not with another token')
  const body = await readValidatedJson(event, createApiTokenBody)
  const expiresAtMs = body.expires_at
    ? Date.parse(body.expires_at)
    : body.expires_in_days !== undefined
      ? Date.now() + body.expires_in_days * 86_400_000
      : null
  const created = await createApiToken(auth.user, { name: body.name, scope: body.scope, expiresAtMs }, auditContextOf(event))
  setResponseStatus(event, 201)
  return created
})
