import { z } from 'zod'
import {
  createApiTokenBody,
  listApiTokensQuery,
  emptyBody,
  forwardAuthCallbackQuery,
  forwardAuthStartQuery,
  loginBody,
  passkeyLoginBody,
  passkeyRegisterBody,
  passkeyRenameBody,
  oidcCallbackQuery,
  oidcLoginQuery,
  roleSchema,
  setupBody,
  totpCodeBody,
} from '../../auth/schemas'
import { idParam, noContent, nullableTimestamp, ok, operation, timestamp } from '../registry'

// Area: authentication, first-run setup, ForwardAuth (users: system.ts).

export const userSchema = z.strictObject({
  id: z.number().int(),
  email: z.string(),
  name: z.string(),
  role: roleSchema,
  provider: z.string().describe('local or oidc'),
  totp_enabled: z.boolean(),
  groups: z.array(z.string()).describe('panel-local groups (an admin sets them)'),
  oidc_groups: z.array(z.string()).describe('read-only: the groups the OIDC group claim gave at the last OIDC login'),
  created_at: timestamp(),
  updated_at: nullableTimestamp(),
})

/** The user as a session carries it (login, session info). */
export const sessionUserSchema = userSchema.omit({ created_at: true, updated_at: true, groups: true, oidc_groups: true })

const apiTokenRefSchema = z.strictObject({ id: z.number().int(), name: z.string(), scope: z.enum(['read', 'admin']) })

const apiTokenSchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  scope: z.enum(['read', 'admin']).describe('as created (narrowed to read when the owner was demoted)'),
  effective_scope: z.enum(['read', 'admin']).describe("what it acts with now: never above the owner's current role"),
  prefix: z.string().describe('the first characters of the secret, to tell tokens apart; not usable on its own'),
  user_id: z.number().int(),
  user_email: z.string(),
  state: z.enum(['active', 'expired', 'revoked']),
  created_at: timestamp(),
  expires_at: nullableTimestamp().describe('null: never expires'),
  last_used_at: nullableTimestamp(),
  last_used_ip: z.union([z.string(), z.null()]),
  revoked_at: nullableTimestamp(),
  revoked_by: z.union([z.string(), z.null()]),
})

const sessionCookie = {
  'Set-Cookie':
    'panel_session=<token>; HttpOnly; SameSite=Lax; Path=/; Domain=<parent of PANEL_DOMAIN>; Secure (except LAN mode from a non-localhost browser)',
}

const passkeySchema = z.strictObject({
  id: z.number().int(),
  name: z.string(),
  transports: z.array(z.string()).describe('how the browser reaches the key (internal, usb, nfc, ble, hybrid)'),
  created_at: timestamp(),
  last_used_at: nullableTimestamp(),
})

// What navigator.credentials.create()/get() take (WebAuthn's JSON form); @simplewebauthn/browser passes it on as it is.
const creationOptionsSchema = z.looseObject({
  challenge: z.string().describe('base64url; single use, valid 5 minutes'),
  rp: z.looseObject({ name: z.string(), id: z.string().optional() }),
  user: z.looseObject({ id: z.string(), name: z.string(), displayName: z.string() }),
  pubKeyCredParams: z.array(z.looseObject({})),
})
const requestOptionsSchema = z.looseObject({
  challenge: z.string().describe('base64url; single use, valid 5 minutes'),
  rpId: z.string().optional(),
  allowCredentials: z.array(z.looseObject({ id: z.string() })).optional(),
  userVerification: z.string().optional(),
})

const passkeyOperations = [
  operation({
    method: 'get',
    path: '/api/auth/passkeys',
    access: 'browser',
    summary: "The caller's passkeys",
    responses: {
      200: ok('names and dates only, never key material', z.strictObject({ passkeys: z.array(passkeySchema) })),
      403: ok('an API token: passkeys are seen and changed from a browser session only'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/passkeys/options',
    access: 'browser',
    summary: 'Start registering a passkey: options for navigator.credentials.create()',
    description:
      'The relying party is PANEL_PUBLIC_URL: its host name is the RP ID. A discoverable key with user verification is required.',
    body: emptyBody,
    responses: {
      200: ok('creation options with a single-use challenge', creationOptionsSchema),
      409: ok('the account signs in through single sign-on, or has 20 passkeys already'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/passkeys',
    access: 'browser',
    summary: "Finish registering a passkey: the authenticator's answer and a name",
    body: passkeyRegisterBody,
    responses: {
      201: ok('the new passkey', passkeySchema),
      400: ok('the answer does not verify (origin, RP ID, challenge expired or used, no user verification)'),
      409: ok('this passkey is already registered'),
    },
  }),
  operation({
    method: 'put',
    path: '/api/auth/passkeys/{id}',
    access: 'browser',
    summary: 'Rename one of your passkeys',
    params: idParam('passkey'),
    body: passkeyRenameBody,
    responses: { 200: ok('renamed', passkeySchema), 404: ok('no such passkey of yours') },
  }),
  operation({
    method: 'delete',
    path: '/api/auth/passkeys/{id}',
    access: 'browser',
    summary: 'Remove one of your passkeys; it signs in no more',
    params: idParam('passkey'),
    responses: { 204: noContent('removed'), 404: ok('no such passkey of yours') },
  }),
  operation({
    method: 'post',
    path: '/api/auth/passkeys/login/options',
    access: 'public',
    summary: 'Start a login with a passkey (no email: any discoverable key of this panel)',
    description:
      'Each challenge lives 5 minutes. At most 10 unanswered challenges per client address (and 10,000 on the panel): beyond, 429 with Retry-After until one is answered or expires.',
    body: emptyBody,
    responses: {
      200: ok('request options with a single-use challenge', requestOptionsSchema),
      429: ok('too many unanswered passkey sign-ins from this address', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/passkeys/login',
    access: 'public',
    summary: 'Log in with a passkey',
    description:
      'A verified passkey is two factors in itself: no TOTP code follows. Failures are throttled and recorded like passwords (429 with Retry-After).',
    body: passkeyLoginBody,
    responses: {
      200: ok('logged in', z.strictObject({ user: sessionUserSchema }), { headers: sessionCookie }),
      401: ok('unknown or removed key, bad signature, wrong origin, or a challenge expired or already used'),
      429: ok('too many recent failures', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/login/passkey/options',
    access: 'public',
    summary: "Second login step with a passkey instead of a TOTP code: options for the pending login's keys",
    body: emptyBody,
    responses: {
      200: ok('request options with a single-use challenge', requestOptionsSchema),
      401: ok('no pending login (the panel_totp_pending cookie expired or was used)'),
      409: ok('the account has no passkey'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/login/passkey',
    access: 'public',
    summary: "Second login step: one of the account's passkeys, with the pending cookie",
    description: "Throttled with TOTP codes (429 with Retry-After). Another account's key is refused.",
    body: passkeyLoginBody,
    responses: {
      200: ok('logged in', z.strictObject({ user: sessionUserSchema }), { headers: sessionCookie }),
      401: ok('not a key of this account, does not verify, challenge expired or used, or no pending login'),
      429: ok('too many recent failures', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
]

export const authOperations = [
  operation({
    method: 'get',
    path: '/api/setup',
    access: 'public',
    summary: 'Whether the first admin still has to be created',
    responses: { 200: ok('setup state', z.strictObject({ needs_setup: z.boolean() })) },
  }),
  operation({
    method: 'post',
    path: '/api/setup',
    access: 'public',
    summary: 'Create the first admin (only while no user exists)',
    body: setupBody,
    responses: { 201: ok('the admin, logged in', userSchema, { headers: sessionCookie }), 409: ok('a user already exists') },
  }),
  operation({
    method: 'post',
    path: '/api/auth/login',
    access: 'public',
    summary: 'Log in with email and password',
    description: '5 failures for one account or 20 from one address within 15 minutes answer 429 with Retry-After.',
    body: loginBody,
    responses: {
      200: ok(
        'logged in, or (account with TOTP) a pending second step: `{totp_pending: true}` with a short-lived panel_totp_pending cookie',
        z.union([z.strictObject({ user: sessionUserSchema }), z.strictObject({ totp_pending: z.literal(true) })]),
        { headers: sessionCookie },
      ),
      401: ok('bad credentials'),
      429: ok('too many recent failures', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/login/totp',
    access: 'public',
    summary: 'Second login step: a TOTP code (or a recovery code) with the pending cookie',
    description: 'A code is accepted once, within ±1 30-second step. Failures are throttled like passwords (429 with Retry-After).',
    body: totpCodeBody,
    responses: {
      200: ok('logged in', z.strictObject({ user: sessionUserSchema }), { headers: sessionCookie }),
      401: ok('wrong, replayed or expired code, or no pending login'),
      429: ok('too many recent failures', undefined, { headers: { 'Retry-After': 'seconds' } }),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/totp/setup',
    access: 'browser',
    summary: 'Start TOTP enrolment: a new secret and its otpauth:// URI (not active until enabled)',
    body: emptyBody,
    responses: {
      200: ok('the secret to enter in an authenticator app', z.strictObject({ secret: z.string(), otpauth_uri: z.string() })),
      409: ok('TOTP is already on, or not for this account'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/totp/enable',
    access: 'browser',
    summary: 'Turn TOTP on with a first code; answers the recovery codes once and rotates the sessions',
    body: totpCodeBody,
    responses: {
      200: ok('TOTP on', z.strictObject({ totp_enabled: z.literal(true), recovery_codes: z.array(z.string()) }), {
        headers: sessionCookie,
      }),
      400: ok('the code does not match (or is malformed)'),
      409: ok('TOTP is already on, or no secret yet (call setup first)'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/totp/disable',
    access: 'browser',
    summary: 'Turn TOTP off with a current code or a recovery code; rotates the sessions',
    body: totpCodeBody,
    responses: {
      200: ok('TOTP off', z.strictObject({ totp_enabled: z.literal(false) }), { headers: sessionCookie }),
      400: ok('the code does not match (or is malformed)'),
      409: ok('TOTP is not enabled'),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/totp/recovery-codes',
    access: 'browser',
    summary: 'A new set of recovery codes (the old set stops working)',
    body: totpCodeBody,
    responses: {
      200: ok('the new codes, shown once', z.strictObject({ recovery_codes: z.array(z.string()) })),
      400: ok('the code does not match (or is malformed)'),
      409: ok('TOTP is not enabled'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/auth/oidc/login',
    access: 'public',
    summary: 'Start an OIDC login (authorization code with PKCE S256)',
    query: oidcLoginQuery,
    responses: {
      400: ok('a parameter over its maximum length'),
      302: ok('to the identity provider, or to /login?oidc_error=<code> when OIDC is off or the provider unreachable', undefined, {
        headers: { Location: 'authorization endpoint with client_id, redirect_uri, state, code_challenge, nonce' },
      }),
    },
  }),
  operation({
    method: 'get',
    path: '/api/auth/oidc/callback',
    access: 'public',
    summary: 'OIDC redirect URI: completes the login',
    description:
      'Failure codes: state_not_found, exchange_failed, token_invalid, email_not_allowed, email_not_verified, account_conflict, provider_error, internal_error (docs/auth.md).',
    query: oidcCallbackQuery,
    responses: {
      400: ok('a parameter over its maximum length'),
      302: ok('to the sanitised rd with the session cookie, or to /login?oidc_error=<code>', undefined, {
        headers: { ...sessionCookie, Location: 'rd or /login?oidc_error=<code>' },
      }),
    },
  }),
  operation({
    method: 'post',
    path: '/api/auth/logout',
    access: 'browser',
    summary: 'Log out: deletes the session and clears the cookie',
    responses: { 204: noContent() },
  }),
  operation({
    method: 'get',
    path: '/api/auth/session',
    access: 'session',
    summary: 'The current session and its user',
    description:
      "With an API token: `user.role` is the role the token acts with (viewer for a read token), `expires_at` the token's expiry (null: none) and `api_token` names it.",
    responses: {
      200: ok(
        'the session',
        z.strictObject({ user: sessionUserSchema, expires_at: nullableTimestamp(), api_token: apiTokenRefSchema.optional() }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/api/auth/providers',
    access: 'public',
    summary: 'Login methods for the login page',
    responses: {
      200: ok(
        'login methods',
        z.strictObject({ local: z.literal(true), oidc: z.strictObject({ enabled: z.boolean(), display_name: z.string() }) }),
      ),
    },
  }),
  operation({
    method: 'get',
    path: '/auth/forward',
    access: 'proxy',
    summary: "ForwardAuth: the proxy's sub-request",
    description:
      "Called by the proxy with the browser's cookies. 200 with X-Auth-User, X-Auth-Email, X-Auth-Name and X-Auth-Provider for a valid session; otherwise 302 to <PANEL_PUBLIC_URL>/login?rd=<original URL rebuilt from X-Forwarded-Proto/Host/Uri>.",
    responses: {
      200: ok('valid session; empty body', undefined, {
        headers: { 'X-Auth-User': 'email', 'X-Auth-Email': 'email', 'X-Auth-Name': 'name or email', 'X-Auth-Provider': 'local or oidc' },
      }),
      302: ok('no valid session: go to the login page', undefined, { headers: { Location: '<PANEL_PUBLIC_URL>/login?rd=<escaped url>' } }),
    },
  }),
  operation({
    method: 'get',
    path: '/auth/forward/start',
    access: 'public',
    summary: 'Strict session mode: a one-time code for a protected host',
    description:
      'Only with the setting auth.strict_sessions (404 otherwise; docs/auth.md). ForwardAuth sends a browser here instead of to the login page. With a panel session: a single-use code valid 60 s, bound to the session and the host of rd, and a 302 to https://<host>/.panel-auth/callback?code=<code>&rd=<path>. Without one: a page that reloads itself once (the SameSite=Strict cookie is not sent on a navigation from another site), then 302 to the login page, which returns here.',
    query: forwardAuthStartQuery,
    responses: {
      200: ok('no session cookie on the first request: a page reloading this one', undefined, { contentType: 'text/html' }),
      302: ok('to the host with a code, or to the login page', undefined, { headers: { Location: 'the next step' } }),
      400: ok('rd is missing, not http(s), or names no host protected by ForwardAuth'),
      404: ok('strict session mode is off'),
    },
  }),
  operation({
    method: 'get',
    path: '/auth/forward/callback',
    access: 'proxy',
    summary: "Strict session mode: a protected host's code traded for its credential",
    description:
      'Reached through the proxy, which routes /.panel-auth/callback of every ForwardAuth host here (404 without auth.strict_sessions). The code is spent on the first call, whatever follows. A fresh code minted for this host (X-Forwarded-Host) of a live session sets the host-only cookie panel_fa (valid for /auth/forward of this host only, never for /api; it ends with the session) and redirects to rd, a path on the same host.',
    query: forwardAuthCallbackQuery,
    responses: {
      302: ok('credential set: on to rd', undefined, {
        headers: { 'Set-Cookie': 'panel_fa=<token>; Path=/; HttpOnly; SameSite=Lax; Secure over https', Location: 'rd' },
      }),
      400: ok('the code is unknown, used, expired, or was minted for another host'),
      404: ok('strict session mode is off'),
    },
  }),
  operation({
    method: 'get',
    path: '/api/tokens',
    access: 'session',
    summary: "Your API tokens (admins: every user's with all=1)",
    description: 'Never the secret or its hash. Revoked and expired tokens stay listed with their state.',
    query: listApiTokensQuery,
    responses: { 200: ok('tokens, newest first', z.array(apiTokenSchema)), 403: ok('all=1 without the admin role') },
  }),
  operation({
    method: 'post',
    path: '/api/tokens',
    access: 'own',
    summary: 'Create an API token; the secret is in this answer only',
    description:
      'Scope `read` (GETs only) or `admin` (only for admins). Use it as `Authorization: Bearer <secret>` on /api/*. Only its SHA-256 is stored. Without an expiry the answer carries a `warning`. Needs a browser session: a token cannot create tokens.',
    body: createApiTokenBody,
    responses: {
      201: ok(
        'the token and its secret (shown once)',
        z.strictObject({
          token: apiTokenSchema,
          secret: z.string().describe('ept_…: store it now, it is never shown again'),
          warning: z.string().optional(),
        }),
      ),
      403: ok('an admin scope asked by a viewer, or the request used an API token'),
      409: ok('you already have an active token with that name'),
    },
  }),
  operation({
    method: 'delete',
    path: '/api/tokens/{id}',
    access: 'own',
    summary: 'Revoke an API token (its owner or an admin)',
    description: "Effective at the next request. Revoking a revoked token changes nothing. Another user's token is 404 to a non-admin.",
    params: idParam('API token'),
    responses: { 204: noContent('revoked'), 404: ok('no such token of yours') },
  }),
  // Passkeys: registration, the login with a passkey, and the passkey as the second step.
  ...passkeyOperations,
]
