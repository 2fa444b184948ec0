import { defineEventHandler, getQuery, sendRedirect, setResponseHeader } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { oidcCallbackQuery } from '~/server/utils/auth/schemas'
import { OidcFailure, asOidcFailure, auditOidcFailure, completeOidcLogin, loginPageWithError } from '~/server/utils/auth/oidc'
import { issueSessionCookie } from '~/server/utils/auth/issue'

// Completes an OIDC login: session cookie + 302 to the sanitised rd, or
// 302 to /login?oidc_error=<code> with an oidc_<code> audit row.
export default defineEventHandler(async (event) => {
  setResponseHeader(event, 'cache-control', 'no-store')
  const ctx = auditContextOf(event)
  try {
    const parsed = oidcCallbackQuery.safeParse(getQuery(event))
    if (!parsed.success) throw new OidcFailure('invalid_request', { reason: 'malformed callback parameters' })
    const { token, rd } = await completeOidcLogin(parsed.data, ctx)
    await issueSessionCookie(event, token)
    return sendRedirect(event, rd, 302)
  } catch (err) {
    const failure = asOidcFailure(err)
    await auditOidcFailure(failure, ctx).catch(() => {})
    return sendRedirect(event, loginPageWithError(failure.code), 302)
  }
})
