import { defineEventHandler, getQuery, sendRedirect, setResponseHeader } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { oidcCallbackQuery } from '~/server/utils/auth/schemas'
import { parseQueryWith } from '~/server/utils/core/validate'
import { asOidcFailure, auditOidcFailure, completeOidcLogin, loginPageWithError } from '~/server/utils/auth/oidc'
import { issueSessionCookie } from '~/server/utils/auth/issue'
import { takeBrowserBinding } from '~/server/utils/auth/oidc-browser'

// Completes an OIDC login started by this browser (its login cookie): session cookie +
// 302 to the sanitised rd, or 302 to /login?oidc_error=<code> with an oidc_<code> audit row.
export default defineEventHandler(async (event) => {
  setResponseHeader(event, 'cache-control', 'no-store')
  const ctx = auditContextOf(event)
  // Parameters over their documented maxima are a 400, like any malformed query.
  const query = parseQueryWith(oidcCallbackQuery, getQuery(event))
  const binding = takeBrowserBinding(event)
  try {
    const { token, rd } = await completeOidcLogin(query, ctx, binding)
    await issueSessionCookie(event, token)
    return sendRedirect(event, rd, 302)
  } catch (err) {
    const failure = asOidcFailure(err)
    await auditOidcFailure(failure, ctx).catch(() => {})
    return sendRedirect(event, loginPageWithError(failure.code), 302)
  }
})
