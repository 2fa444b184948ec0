import { defineEventHandler, getQuery, sendRedirect, setResponseHeader } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { oidcLoginQuery } from '~/server/utils/auth/schemas'
import { parseQueryWith } from '~/server/utils/core/validate'
import { asOidcFailure, auditOidcFailure, loginPageWithError, startOidcLogin } from '~/server/utils/auth/oidc'

// Starts an OIDC login: 302 to the identity provider (state, nonce, PKCE S256),
// or to /login?oidc_error=<code> when OIDC is off or the provider is unreachable.
export default defineEventHandler(async (event) => {
  setResponseHeader(event, 'cache-control', 'no-store')
  // Over-long parameters are a 400 before anything starts; `rd` itself is sanitised, never refused.
  const { rd } = parseQueryWith(oidcLoginQuery, getQuery(event))
  try {
    return sendRedirect(event, await startOidcLogin(rd), 302)
  } catch (err) {
    const failure = asOidcFailure(err)
    await auditOidcFailure(failure, auditContextOf(event)).catch(() => {})
    return sendRedirect(event, loginPageWithError(failure.code), 302)
  }
})
