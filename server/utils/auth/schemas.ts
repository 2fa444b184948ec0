import { z } from 'zod'
import { emailSchema, safeText } from '../core/validate'
import { MIN_PASSWORD_LENGTH, passwordProblem } from './passwords'
import { groupNameSchema } from '../access/schemas'

export const passwordSchema = z
  .string()
  .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(256, 'must be at most 256 characters')

/** Password rules that need the email too: the password may not be the email (or its local part). */
function _passwordNotEmail<T extends { email: string; password?: string }>(value: T, ctx: z.RefinementCtx): void {
  if (value.password === undefined) return
  const problem = passwordProblem(value.password, value.email)
  if (problem) ctx.addIssue({ code: 'custom', path: ['password'], message: problem })
}

export const loginBody = z.strictObject({ email: emailSchema, password: z.string().max(256, 'must be at most 256 characters') })
export const setupBody = z
  .strictObject({ email: emailSchema, password: passwordSchema, name: safeText(100).optional() })
  .superRefine(_passwordNotEmail)
export const roleSchema = z.enum(['admin', 'viewer'], { message: 'must be "admin" or "viewer"' })
/** A user's panel-local groups (docs/access-control.md, "Who may enter a protected host"). */
export const userGroupsSchema = z
  .array(groupNameSchema)
  .max(50, 'at most 50 groups')
  .refine((a) => new Set(a).size === a.length, 'must not repeat a group')
  .describe('panel-local groups; a host may admit a group (auth_allowed_groups)')
export const createUserBody = z
  .strictObject({
    email: emailSchema,
    password: passwordSchema,
    name: safeText(100).optional(),
    role: roleSchema,
    groups: userGroupsSchema.optional(),
  })
  .superRefine(_passwordNotEmail)
export const updateUserBody = z
  .strictObject({
    email: emailSchema,
    name: safeText(100),
    role: roleSchema,
    password: passwordSchema.optional(),
    // Left out: the stored groups stay (a client that predates them does not wipe them).
    groups: userGroupsSchema.optional(),
  })
  .superRefine(_passwordNotEmail)

/** A 6-digit TOTP code, or (where accepted) a recovery code such as abcd-efgh-ijkl-mnop. */
export const totpCodeBody = z.strictObject({
  code: z
    .string()
    .trim()
    .min(6, 'must be the 6-digit code from the authenticator app, or a recovery code')
    .max(64, 'must be the 6-digit code from the authenticator app, or a recovery code'),
})

const _queryText = (max: number) => z.string().max(max, `must be at most ${max} characters`).optional()

/** GET /api/auth/oidc/login: `rd` is sanitised (never rejected), other parameters are ignored. */
export const oidcLoginQuery = z.looseObject({ rd: _queryText(4096) })

/** GET /api/auth/oidc/callback: what the identity provider appends to the redirect URI. */
export const oidcCallbackQuery = z.looseObject({
  code: _queryText(4096),
  state: _queryText(512),
  iss: _queryText(2048),
  error: _queryText(256),
  error_description: _queryText(1024),
})

/** Routes that take no body (an empty body or {} is accepted). */
export const emptyBody = z.strictObject({})

/** How far ahead a token's expiry may be set (docs/api-tokens.md). */
export const API_TOKEN_MAX_LIFETIME_DAYS = 3650

/**
 * POST /api/tokens. The expiry is `expires_at` (RFC 3339) or `expires_in_days`;
 * neither (or `expires_at: null`) makes a token that never expires, answered with a warning.
 */
export const createApiTokenBody = z
  .strictObject({
    name: safeText(64).trim().min(1, 'must not be empty: name the script or machine that will use the token'),
    scope: z.enum(['read', 'admin'], { message: 'must be "read" or "admin"' }),
    expires_at: z
      .union([z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp such as 2030-01-31T00:00:00Z' }), z.null()])
      .optional(),
    expires_in_days: z
      .number()
      .int('must be a whole number of days')
      .min(1, 'must be at least 1')
      .max(API_TOKEN_MAX_LIFETIME_DAYS, `must be at most ${API_TOKEN_MAX_LIFETIME_DAYS}`)
      .optional(),
  })
  .superRefine((v, ctx) => {
    if (v.expires_at != null && v.expires_in_days !== undefined)
      ctx.addIssue({ code: 'custom', path: ['expires_in_days'], message: 'give either expires_at or expires_in_days, not both' })
    if (v.expires_at != null) {
      const ms = Date.parse(v.expires_at)
      if (ms <= Date.now()) ctx.addIssue({ code: 'custom', path: ['expires_at'], message: 'must be in the future' })
      else if (ms > Date.now() + API_TOKEN_MAX_LIFETIME_DAYS * 86_400_000)
        ctx.addIssue({ code: 'custom', path: ['expires_at'], message: `must be at most ${API_TOKEN_MAX_LIFETIME_DAYS} days ahead` })
    }
  })

/** GET /api/tokens: `all=1` (admins) lists every user's tokens. */
export const listApiTokensQuery = z.strictObject({ all: z.enum(['0', '1'], { message: 'must be 0 or 1' }).optional() })

/** Strict session mode (forward-credentials.ts): the start of the code exchange, on the panel's name. */
export const forwardAuthStartQuery = z.strictObject({
  rd: z.string().max(4096).describe('the URL of the protected page; its host must be an enabled host with auth_required'),
  bounce: z.literal('1').optional().describe('set by the reload: the browser was asked once already'),
})
/** Strict session mode: the code traded on the protected host (the proxy's /.panel-auth/callback). */
export const forwardAuthCallbackQuery = z.strictObject({
  code: z.string().max(128).describe('the one-time code from /auth/forward/start'),
  rd: z.string().max(4096).optional().describe('a path on this host (anything else: /)'),
})
