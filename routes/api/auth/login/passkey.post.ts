import { defineEventHandler, getCookie } from 'h3'
import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { passkeyLoginBody } from '~/server/utils/auth/schemas'
import { completeSecondFactorWithPasskey } from '~/server/utils/auth/passkeys'
import { TOTP_PENDING_COOKIE, clearTotpPendingCookie } from '~/server/utils/auth/cookie'
import { issueSessionCookie } from '~/server/utils/auth/issue'

// Second step of a password login for an account with TOTP, done with one of its passkeys.
export default defineEventHandler(async (event) => {
  const { response } = await readValidatedJson(event, passkeyLoginBody)
  const { user, token } = await completeSecondFactorWithPasskey(
    getCookie(event, TOTP_PENDING_COOKIE),
    response as AuthenticationResponseJSON,
    auditContextOf(event),
  )
  clearTotpPendingCookie(event)
  await issueSessionCookie(event, token)
  return { user }
})
