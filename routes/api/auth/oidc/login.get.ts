import { defineEventHandler, getQuery, sendRedirect, setResponseHeader } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { oidcLoginQuery } from '~/server/utils/auth/schemas'
import { asOidcFailure, auditOidcFailure, loginPageWithError, startOidcLogin } from '~/server/utils/auth/oidc'

// Starts an OIDC login: 302 to the identity provider (state, nonce, PKCE S256),
// or to /login?oidc_error=<code> when OIDC is off or the provider is unreachable.
export default defineEventHandler(async (event) => {
  setResponseHeader(event, 'cache-control', 'no-store')
  const parsed = oidcLoginQuery.safeParse(getQuery(event))
  const rd = parsed.success ? parsed.data.rd : undefined
  try {
    return sendRedirect(event, await startOidcLogin(rd), 302)
  } catch (err) {
    const failure = asOidcFailure(err)
    await auditOidcFailure(failure, auditContextOf(event)).catch(() => {})
    return sendRedirect(event, loginPageWithError(failure.code), 302)
  }
})
