import { z } from 'zod'
import { emailSchema, safeText } from '../core/validate'
import { MIN_PASSWORD_LENGTH, passwordProblem } from './passwords'

export const passwordSchema = z.string()
  .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(256, 'must be at most 256 characters')

/** Password rules that need the email too: the password may not be the email (or its local part). */
function _passwordNotEmail<T extends { email: string; password?: string }>(value: T, ctx: z.RefinementCtx): void {
  if (value.password === undefined) return
  const problem = passwordProblem(value.password, value.email)
  if (problem) ctx.addIssue({ code: 'custom', path: ['password'], message: problem })
}

export const loginBody = z.strictObject({ email: emailSchema, password: z.string().max(256, 'must be at most 256 characters') })
export const setupBody = z.strictObject({ email: emailSchema, password: passwordSchema, name: safeText(100).optional() }).superRefine(_passwordNotEmail)
export const roleSchema = z.enum(['admin', 'viewer'], { message: 'must be "admin" or "viewer"' })
export const createUserBody = z.strictObject({ email: emailSchema, password: passwordSchema, name: safeText(100).optional(), role: roleSchema })
  .superRefine(_passwordNotEmail)
export const updateUserBody = z.strictObject({ email: emailSchema, name: safeText(100), role: roleSchema, password: passwordSchema.optional() })
  .superRefine(_passwordNotEmail)

/** A 6-digit TOTP code, or (where accepted) a recovery code such as abcd-efgh-ijkl-mnop. */
export const totpCodeBody = z.strictObject({
  code: z.string().trim().min(6, 'must be the 6-digit code from the authenticator app, or a recovery code')
    .max(64, 'must be the 6-digit code from the authenticator app, or a recovery code'),
})

const _queryText = (max: number) => z.string().max(max, `must be at most ${max} characters`).optional()

/** GET /api/auth/oidc/login: `rd` is sanitised (never rejected), other parameters are ignored. */
export const oidcLoginQuery = z.looseObject({ rd: _queryText(4096) })

/** GET /api/auth/oidc/callback: what the identity provider appends to the redirect URI. */
export const oidcCallbackQuery = z.looseObject({
  code: _queryText(4096), state: _queryText(512), iss: _queryText(2048),
  error: _queryText(256), error_description: _queryText(1024),
})

/** Routes that take no body (an empty body or {} is accepted). */
export const emptyBody = z.strictObject({})
