import { defineEventHandler, getQuery, sendRedirect, setResponseHeader } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { oidcLoginQuery } from '~/server/utils/auth/schemas'
import { parseWith } from '~/server/utils/core/validate'
import { asOidcFailure, auditOidcFailure, loginPageWithError, startOidcLogin } from '~/server/utils/auth/oidc'
import { bindLoginToBrowser } from '~/server/utils/auth/oidc-browser'

// Starts an OIDC login: 302 to the identity provider (state, nonce, PKCE S256) with the
// browser's login cookie set, or to /login?oidc_error=<code> when OIDC is off or the
// provider is unreachable.
export default defineEventHandler(async (event) => {
  setResponseHeader(event, 'cache-control', 'no-store')
  // An over-long `rd` is a 400 before anything starts; otherwise it is sanitised (control
  // characters included), never refused, so the query skips parseQueryWith's character check.
  const { rd } = parseWith(oidcLoginQuery, getQuery(event), 'query')
  try {
    const url = await startOidcLogin(rd, bindLoginToBrowser(event).bindingHash)
    return sendRedirect(event, url, 302)
  } catch (err) {
    const failure = asOidcFailure(err)
    await auditOidcFailure(failure, auditContextOf(event)).catch(() => {})
    return sendRedirect(event, loginPageWithError(failure.code), 302)
  }
})
