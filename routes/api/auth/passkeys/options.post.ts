import { defineEventHandler } from 'h3'
import { requireSession } from '~/server/utils/auth/access'
import { readValidatedJson } from '~/server/utils/core/validate'
import { emptyBody } from '~/server/utils/auth/schemas'
import { beginPasskeyRegistration } from '~/server/utils/auth/passkeys'

// Registration step 1: options for navigator.credentials.create(), with a single-use challenge.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  await readValidatedJson(event, emptyBody)
  return beginPasskeyRegistration(user.id)
})
