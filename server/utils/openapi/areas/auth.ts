import { z } from 'zod'
import { emptyBody, loginBody, oidcCallbackQuery, oidcLoginQuery, roleSchema, setupBody, totpCodeBody } from '../../auth/schemas'
import { noContent, nullableTimestamp, ok, operation, timestamp } from '../registry'

// Area: authentication, first-run setup, ForwardAuth (users: system.ts).

export const userSchema = z.strictObject({
  id: z.number().int(), email: z.string(), name: z.string(), role: roleSchema,
  provider: z.string().describe('local or oidc'), totp_enabled: z.boolean(),
  created_at: timestamp(), updated_at: nullableTimestamp(),
})

/** The user as a session carries it (login, session info). */
export const sessionUserSchema = userSchema.omit({ created_at: true, updated_at: true })

const sessionCookie = { 'Set-Cookie': 'panel_session=<token>; HttpOnly; SameSite=Lax; Path=/; Domain=<parent of PANEL_DOMAIN>; Secure (except LAN mode from a non-localhost browser)' }

export const authOperations = [
  operation({
    method: 'get', path: '/api/setup', access: 'public', summary: 'Whether the first admin still has to be created',
    responses: { 200: ok('setup state', z.strictObject({ needs_setup: z.boolean() })) },
  }),
  operation({
    method: 'post', path: '/api/setup', access: 'public', summary: 'Create the first admin (only while no user exists)',
    body: setupBody,
    responses: { 201: ok('the admin, logged in', userSchema, { headers: sessionCookie }), 409: ok('a user already exists') },
  }),
  operation({
    method: 'post', path: '/api/auth/login', access: 'public', summary: 'Log in with email and password',
    description: '5 failures for one account or 20 from one address within 15 minutes answer 429 with Retry-After.',
    body: loginBody,
    responses: {
      200: ok('logged in, or (account with TOTP) a pending second step: `{totp_pending: true}` with a short-lived panel_totp_pending cookie',
        z.union([z.strictObject({ user: sessionUserSchema }), z.strictObject({ totp_pending: z.literal(true) })]), { headers: sessionCookie }),
      401: ok('bad credentials'),
      429: ok('too many recent failures', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
  operation({
    method: 'post', path: '/api/auth/login/totp', access: 'public', summary: 'Second login step: a TOTP code (or a recovery code) with the pending cookie',
    description: 'A code is accepted once, within ±1 30-second step. Failures are throttled like passwords (429 with Retry-After).',
    body: totpCodeBody,
    responses: {
      200: ok('logged in', z.strictObject({ user: sessionUserSchema }), { headers: sessionCookie }),
      401: ok('wrong, replayed or expired code, or no pending login'),
      429: ok('too many recent failures', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
  operation({
    method: 'post', path: '/api/auth/totp/setup', access: 'session', summary: 'Start TOTP enrolment: a new secret and its otpauth:// URI (not active until enabled)',
    body: emptyBody,
    responses: { 200: ok('the secret to enter in an authenticator app', z.strictObject({ secret: z.string(), otpauth_uri: z.string() })), 409: ok('TOTP is already on, or not for this account') },
  }),
  operation({
    method: 'post', path: '/api/auth/totp/enable', access: 'session', summary: 'Turn TOTP on with a first code; answers the recovery codes once and rotates the sessions',
    body: totpCodeBody,
    responses: { 200: ok('TOTP on', z.strictObject({ totp_enabled: z.literal(true), recovery_codes: z.array(z.string()) }), { headers: sessionCookie }), 400: ok('the code does not match (or is malformed)'), 409: ok('TOTP is already on, or no secret yet (call setup first)') },
  }),
  operation({
    method: 'post', path: '/api/auth/totp/disable', access: 'session', summary: 'Turn TOTP off with a current code or a recovery code; rotates the sessions',
    body: totpCodeBody,
    responses: { 200: ok('TOTP off', z.strictObject({ totp_enabled: z.literal(false) }), { headers: sessionCookie }), 400: ok('the code does not match (or is malformed)'), 409: ok('TOTP is not enabled') },
  }),
  operation({
    method: 'post', path: '/api/auth/totp/recovery-codes', access: 'session', summary: 'A new set of recovery codes (the old set stops working)',
    body: totpCodeBody,
    responses: { 200: ok('the new codes, shown once', z.strictObject({ recovery_codes: z.array(z.string()) })), 400: ok('the code does not match (or is malformed)'), 409: ok('TOTP is not enabled') },
  }),
  operation({
    method: 'get', path: '/api/auth/oidc/login', access: 'public', summary: 'Start an OIDC login (authorization code with PKCE S256)',
    query: oidcLoginQuery,
    responses: { 400: ok('a parameter over its maximum length'), 302: ok('to the identity provider, or to /login?oidc_error=<code> when OIDC is off or the provider unreachable', undefined, { headers: { Location: 'authorization endpoint with client_id, redirect_uri, state, code_challenge, nonce' } }) },
  }),
  operation({
    method: 'get', path: '/api/auth/oidc/callback', access: 'public', summary: 'OIDC redirect URI: completes the login',
    description: 'Failure codes: state_not_found, exchange_failed, token_invalid, email_not_allowed, email_not_verified, account_conflict, provider_error, internal_error (docs/auth.md).',
    query: oidcCallbackQuery,
    responses: { 400: ok('a parameter over its maximum length'), 302: ok('to the sanitised rd with the session cookie, or to /login?oidc_error=<code>', undefined, { headers: { ...sessionCookie, Location: 'rd or /login?oidc_error=<code>' } }) },
  }),
  operation({
    method: 'post', path: '/api/auth/logout', access: 'session', summary: 'Log out: deletes the session and clears the cookie',
    responses: { 204: noContent() },
  }),
  operation({
    method: 'get', path: '/api/auth/session', access: 'session', summary: 'The current session and its user',
    responses: { 200: ok('the session', z.strictObject({ user: sessionUserSchema, expires_at: timestamp() })) },
  }),
  operation({
    method: 'get', path: '/api/auth/providers', access: 'public', summary: 'Login methods for the login page',
    responses: { 200: ok('login methods', z.strictObject({ local: z.literal(true), oidc: z.strictObject({ enabled: z.boolean(), display_name: z.string() }) })) },
  }),
  operation({
    method: 'get', path: '/auth/forward', access: 'proxy', summary: "ForwardAuth: the proxy's sub-request",
    description: 'Called by the proxy with the browser\'s cookies. 200 with X-Auth-User, X-Auth-Email, X-Auth-Name and X-Auth-Provider for a valid session; otherwise 302 to <PANEL_PUBLIC_URL>/login?rd=<original URL rebuilt from X-Forwarded-Proto/Host/Uri>.',
    responses: {
      200: ok('valid session; empty body', undefined, { headers: { 'X-Auth-User': 'email', 'X-Auth-Email': 'email', 'X-Auth-Name': 'name or email', 'X-Auth-Provider': 'local or oidc' } }),
      302: ok('no valid session: go to the login page', undefined, { headers: { Location: '<PANEL_PUBLIC_URL>/login?rd=<escaped url>' } }),
    },
  }),
]
