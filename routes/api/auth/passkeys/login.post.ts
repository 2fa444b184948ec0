import { defineEventHandler } from 'h3'
import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { passkeyLoginBody } from '~/server/utils/auth/schemas'
import { loginWithPasskey } from '~/server/utils/auth/passkeys'
import { issueSessionCookie } from '~/server/utils/auth/issue'

// A login with a passkey alone: the same session cookie and throttle as a password login.
export default defineEventHandler(async (event) => {
  const { response } = await readValidatedJson(event, passkeyLoginBody)
  const { user, token } = await loginWithPasskey(response as AuthenticationResponseJSON, auditContextOf(event))
  await issueSessionCookie(event, token)
  return { user }
})
