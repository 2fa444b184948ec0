import { defineEventHandler, setResponseStatus } from 'h3'
import type { RegistrationResponseJSON } from '@simplewebauthn/server'
import { requireSession } from '~/server/utils/auth/access'
import { auditContextOf } from '~/server/utils/core/audit'
import { readValidatedJson } from '~/server/utils/core/validate'
import { passkeyRegisterBody } from '~/server/utils/auth/schemas'
import { finishPasskeyRegistration } from '~/server/utils/auth/passkeys'

// Registration step 2: the authenticator's answer and a name for the key.
export default defineEventHandler(async (event) => {
  const { user } = requireSession(event)
  const { name, response } = await readValidatedJson(event, passkeyRegisterBody)
  const passkey = await finishPasskeyRegistration(user.id, { name, response: response as RegistrationResponseJSON }, auditContextOf(event))
  setResponseStatus(event, 201)
  return passkey
})
