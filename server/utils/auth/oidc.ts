import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import { users } from '../../../db/schema'
import { writeTransaction, type Tx } from '../core/db'
import { getConfig } from '../core/config'
import { getSetting } from '../core/settings'
import { writeAudit, type AuditContext } from '../core/audit'
import { isUniqueViolation } from '../core/errors'
import { nowMs } from '../core/clock'
import { logger } from '../core/log'
import { createPendingStore } from './pending-store'
import { sanitizeRedirectTarget } from './redirect'
import { createSession, deleteSessionsOfUser, forgetCachedSessionsOfUser } from './sessions'
import { browserBindingMatches } from './oidc-browser'
import { narrowApiTokensOfUser, revokeApiTokensOfUser } from './api-tokens'
import { otherAdminCount } from './users'
import { decideOidcAccess, groupsOfClaims, type OidcAccessDecision, type OidcGroupRole } from './oidc-groups'

// OIDC login, authorization code flow with PKCE (S256), spec Authentication 4.
// Login keeps state, nonce and code_verifier in a single-use pending store
// (10 minutes), binds it to the browser with a cookie (oidc-browser.ts) and
// redirects to the provider; the callback requires that cookie, exchanges the code,
// verifies the id_token with jose (issuer, audience, signature against the
// provider's JWKS, expiry, nonce), upserts the user by `sub`, then checks the
// allowlist and the email-verified requirement, stores the groups of the configured claim and
// applies the groups mapping (oidc-groups.ts: a role, or a refusal that ends the user's
// sessions). Every failure has a stable code
// that the login page shows (`/login?oidc_error=<code>`) and an audit row
// `oidc_<code>`.

export const OIDC_PENDING_LIFETIME_MS = 10 * 60_000
export const OIDC_SCOPES = 'openid email profile'
const _HTTP_TIMEOUT_MS = 10_000
const _DISCOVERY_CACHE_MS = 5 * 60_000
/** Clock skew tolerated between the panel and the identity provider when checking exp/iat/nbf. */
const _CLOCK_TOLERANCE_SECONDS = 30

export type OidcErrorCode =
  | 'oidc_disabled'
  | 'provider_unreachable'
  | 'state_not_found'
  | 'provider_error'
  | 'exchange_failed'
  | 'token_invalid'
  | 'email_missing'
  | 'account_conflict'
  | 'email_not_allowed'
  | 'email_not_verified'
  | 'group_not_allowed'
  | 'group_refused'
  | 'internal_error'

/** A refused login: `code` goes to the login page; `details` (no secrets, no tokens) to the audit row. */
export class OidcFailure extends Error {
  constructor(
    readonly code: OidcErrorCode,
    readonly details: Record<string, unknown> = {},
  ) {
    super(`OIDC login refused: ${code}`)
  }
}

interface PendingLogin {
  nonce: string
  codeVerifier: string
  rd: string
  issuer: string
  clientId: string
  /** SHA-256 of the value in the browser's login cookie: the callback must come from that browser. */
  browserHash: string
}

export const oidcPendingStates = createPendingStore<PendingLogin>({ prefix: 'auth:oidc-pending', ttlMs: OIDC_PENDING_LIFETIME_MS })

export function oidcRedirectUri(): string {
  return `${getConfig().publicUrl}/api/auth/oidc/callback`
}

export function loginPageWithError(code: OidcErrorCode): string {
  return `/login?oidc_error=${code}`
}

interface _Discovery {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
  token_endpoint_auth_methods_supported?: string[]
  id_token_signing_alg_values_supported?: string[]
}

const _discoveryCache = new Map<string, { doc: _Discovery; fetchedAtMs: number }>()
const _jwksCache = new Map<string, ReturnType<typeof createRemoteJWKSet>>()

function _isHttpUrl(v: unknown): v is string {
  if (typeof v !== 'string') return false
  try {
    return ['http:', 'https:'].includes(new URL(v).protocol)
  } catch {
    return false
  }
}

/** The provider's discovery document (cached 5 minutes); it must name the configured issuer. */
async function _discover(issuer: string): Promise<_Discovery> {
  const cached = _discoveryCache.get(issuer)
  if (cached && Date.now() - cached.fetchedAtMs < _DISCOVERY_CACHE_MS) return cached.doc
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
  let doc: any
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(_HTTP_TIMEOUT_MS), headers: { accept: 'application/json' } })
    if (!res.ok) throw new OidcFailure('provider_unreachable', { reason: `discovery answered ${res.status}` })
    doc = await res.json()
  } catch (err) {
    if (err instanceof OidcFailure) throw err
    throw new OidcFailure('provider_unreachable', { reason: `discovery failed: ${(err as Error).name}` })
  }
  const trim = (v: string) => v.replace(/\/+$/, '')
  if (
    !doc ||
    typeof doc.issuer !== 'string' ||
    trim(doc.issuer) !== trim(issuer) ||
    !_isHttpUrl(doc.authorization_endpoint) ||
    !_isHttpUrl(doc.token_endpoint) ||
    !_isHttpUrl(doc.jwks_uri)
  )
    throw new OidcFailure('provider_unreachable', { reason: 'the discovery document does not match the issuer or lacks endpoints' })
  _discoveryCache.set(issuer, { doc, fetchedAtMs: Date.now() })
  return doc
}

function _jwksFor(uri: string) {
  let jwks = _jwksCache.get(uri)
  if (!jwks) {
    jwks = createRemoteJWKSet(new URL(uri), { timeoutDuration: _HTTP_TIMEOUT_MS })
    _jwksCache.set(uri, jwks)
  }
  return jwks
}

const _random = () => randomBytes(32).toString('base64url')
const _s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url')

async function _settings() {
  return {
    issuer: (await getSetting<string>('oidc.issuer')).trim(),
    clientId: await getSetting<string>('oidc.client_id'),
    allowedEmails: (await getSetting<string[]>('oidc.allowed_emails')).map((e) => e.toLowerCase()),
    requireEmailVerified: await getSetting<boolean>('oidc.require_email_verified'),
    groupsClaim: await getSetting<string>('oidc.groups_claim'),
    groupRoles: await getSetting<Record<string, OidcGroupRole>>('oidc.group_roles'),
    allowedGroups: await getSetting<string[]>('oidc.allowed_groups'),
  }
}

/**
 * GET /api/auth/oidc/login: the URL of the provider's authorization endpoint for a new login,
 * bound to the browser whose login cookie hashes to `browserHash`.
 */
export async function startOidcLogin(rd: string | undefined, browserHash: string): Promise<string> {
  const s = await _settings()
  if (!s.issuer || !s.clientId) throw new OidcFailure('oidc_disabled')
  const discovery = await _discover(s.issuer)
  const state = _random()
  const nonce = _random()
  const codeVerifier = _random()
  await oidcPendingStates.put(state, {
    nonce,
    codeVerifier,
    rd: sanitizeRedirectTarget(rd, getConfig().domain, '/'),
    issuer: discovery.issuer,
    clientId: s.clientId,
    browserHash,
  })
  const url = new URL(discovery.authorization_endpoint)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', s.clientId)
  url.searchParams.set('redirect_uri', oidcRedirectUri())
  url.searchParams.set('scope', OIDC_SCOPES)
  url.searchParams.set('state', state)
  url.searchParams.set('nonce', nonce)
  url.searchParams.set('code_challenge', _s256(codeVerifier))
  url.searchParams.set('code_challenge_method', 'S256')
  return url.toString()
}

async function _exchangeCode(discovery: _Discovery, pending: PendingLogin, code: string): Promise<string> {
  const clientSecret = await getSetting<string>('oidc.client_secret') // decrypted only here
  const body = new URLSearchParams({
    grant_type: 'authorization_code',
    code,
    redirect_uri: oidcRedirectUri(),
    code_verifier: pending.codeVerifier,
  })
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
  const methods = discovery.token_endpoint_auth_methods_supported ?? ['client_secret_basic']
  if (!clientSecret) {
    body.set('client_id', pending.clientId)
  } else if (!methods.includes('client_secret_basic') && methods.includes('client_secret_post')) {
    body.set('client_id', pending.clientId)
    body.set('client_secret', clientSecret)
  } else {
    // RFC 6749 2.3.1: both parts form-urlencoded before the Basic encoding.
    const basic = `${encodeURIComponent(pending.clientId)}:${encodeURIComponent(clientSecret)}`
    headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`
  }
  let res: Response
  try {
    res = await fetch(discovery.token_endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(_HTTP_TIMEOUT_MS) })
  } catch (err) {
    throw new OidcFailure('exchange_failed', { reason: `token endpoint unreachable: ${(err as Error).name}` })
  }
  let json: any
  try {
    json = await res.json()
  } catch {
    json = undefined
  }
  if (!res.ok) {
    const providerError = typeof json?.error === 'string' && /^[a-z_]{1,64}$/.test(json.error) ? json.error : undefined
    throw new OidcFailure('exchange_failed', { reason: `token endpoint answered ${res.status}`, provider_error: providerError })
  }
  if (typeof json?.id_token !== 'string') throw new OidcFailure('exchange_failed', { reason: 'no id_token in the token response' })
  return json.id_token
}

function _reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired'
  if (err instanceof joseErrors.JWTClaimValidationFailed)
    return err.claim === 'aud' ? 'audience' : err.claim === 'iss' ? 'issuer' : `claim_${err.claim}`
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature'
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'unknown_key'
  if (err instanceof joseErrors.JWKSTimeout || (err instanceof joseErrors.JOSEError && err.code === 'ERR_JOSE_GENERIC'))
    return 'jwks_unavailable'
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm'
  return 'malformed'
}

function _sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest()
  const y = createHash('sha256').update(b).digest()
  return timingSafeEqual(x, y)
}

async function _verifyIdToken(discovery: _Discovery, pending: PendingLogin, idToken: string): Promise<JWTPayload> {
  let payload: JWTPayload
  try {
    ;({ payload } = await jwtVerify(idToken, _jwksFor(discovery.jwks_uri), {
      issuer: pending.issuer,
      audience: pending.clientId,
      currentDate: new Date(nowMs()),
      clockTolerance: _CLOCK_TOLERANCE_SECONDS,
      requiredClaims: ['sub', 'exp', 'iat'],
    }))
  } catch (err) {
    throw new OidcFailure('token_invalid', { reason: _reasonOf(err) })
  }
  if (typeof payload.nonce !== 'string' || !_sameSecret(payload.nonce, pending.nonce))
    throw new OidcFailure('token_invalid', { reason: 'nonce' })
  if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== pending.clientId)
    throw new OidcFailure('token_invalid', { reason: 'azp' })
  if (typeof payload.sub !== 'string' || !payload.sub || payload.sub.length > 255) throw new OidcFailure('token_invalid', { reason: 'sub' })
  return payload
}

type UserRow = typeof users.$inferSelect

/** Finds the user by (oidc, sub); creates it (role viewer) or refreshes its email, name and groups. */
async function _upsertUser(
  tx: Tx,
  sub: string,
  email: string,
  name: string,
  oidcGroups: string[],
): Promise<{ row: UserRow; created: boolean }> {
  const now = new Date().toISOString()
  const existing = await tx
    .select()
    .from(users)
    .where(and(eq(users.provider, 'oidc'), eq(users.externalId, sub)))
    .get()
  try {
    if (existing) {
      const row = await tx
        .update(users)
        .set({ email, name: name || existing.name, oidcGroups, updatedAt: now })
        .where(eq(users.id, existing.id))
        .returning()
        .get()
      // Protected hosts read the groups (per-host identity): the user's cached sessions must not answer with the old ones.
      if (JSON.stringify(existing.oidcGroups) !== JSON.stringify(oidcGroups)) await forgetCachedSessionsOfUser(tx, existing.id)
      return { row: row!, created: false }
    }
    const row = await tx
      .insert(users)
      .values({
        email,
        name,
        role: 'viewer',
        passwordHash: null,
        provider: 'oidc',
        externalId: sub,
        oidcGroups,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get()
    return { row, created: true }
  } catch (err) {
    if (isUniqueViolation(err)) throw new OidcFailure('account_conflict', { sub, email })
    throw err
  }
}

const _claimText = (v: unknown, max: number) => (typeof v === 'string' ? v.replace(/[\u0000-\u001f\u007f]/g, '').slice(0, max) : '')

export interface OidcLoginResult {
  token: string
  expiresAtMs: number
  rd: string
  userId: number
}

/**
 * GET /api/auth/oidc/callback, with the binding the browser's login cookie carried. Throws
 * OidcFailure for every refusal; the caller audits it (auditOidcFailure) and redirects to the
 * login page with the code.
 */
export async function completeOidcLogin(
  query: { code?: string; state?: string; error?: string },
  ctx: AuditContext,
  browserBinding: string | undefined,
): Promise<OidcLoginResult> {
  const pending = query.state ? await oidcPendingStates.take(query.state) : null
  if (!pending) throw new OidcFailure('state_not_found')
  // A state this browser did not start is unknown to it (spec: state_not_found); it is used up
  // all the same, so a callback URL handed to someone else is dead for everyone.
  if (!browserBindingMatches(browserBinding, pending.browserHash))
    throw new OidcFailure('state_not_found', {
      reason: browserBinding ? 'started_in_another_browser' : 'no_login_cookie',
    })
  if (query.error) throw new OidcFailure('provider_error', { provider_error: /^[a-z_]{1,64}$/.test(query.error) ? query.error : 'unknown' })
  if (!query.code) throw new OidcFailure('exchange_failed', { reason: 'no code in the callback' })
  const discovery = await _discover(pending.issuer)
  const idToken = await _exchangeCode(discovery, pending, query.code)
  const claims = await _verifyIdToken(discovery, pending, idToken)
  // From here the token is trusted (spec Authentication 4).
  const sub = claims.sub!
  const email = _claimText(claims.email, 254).trim().toLowerCase()
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) throw new OidcFailure('email_missing', { sub })
  const name = _claimText(claims.name, 100)
  const s = await _settings()
  const groups = groupsOfClaims(claims, s.groupsClaim)
  const { row, created } = await writeTransaction(async (tx) => {
    const result = await _upsertUser(tx, sub, email, name, groups)
    if (result.created)
      await writeAudit({ ...ctx, actor: email }, 'oidc_user_create', { user_id: result.row.id, email, sub, role: result.row.role }, tx)
    return result
  })
  if (s.allowedEmails.length && !s.allowedEmails.includes(email))
    throw new OidcFailure('email_not_allowed', { sub, email, user_id: row.id })
  if (s.requireEmailVerified && claims.email_verified !== true) throw new OidcFailure('email_not_verified', { sub, email, user_id: row.id })
  const decision = decideOidcAccess(groups, s)
  const result = await writeTransaction(async (tx) => {
    const refused = await _applyGroupsDecision(tx, row, decision, groups, ctx)
    if (refused) return { refused: new OidcFailure(refused.code, { sub, email, user_id: row.id, ...refused.details }) }
    const session = await createSession(tx, row.id, ctx)
    await writeAudit({ ...ctx, actor: row.email }, 'oidc_login', { user_id: row.id, email: row.email, sub, created, groups }, tx)
    return { session }
  })
  if ('refused' in result) throw result.refused
  return { ...result.session, rd: pending.rd, userId: row.id }
}

const _MAPPING_ACTOR = 'system:oidc-mapping'

/**
 * The groups mapping's decision made true for the user, inside the login's transaction: a role
 * change (its audit row by the mapping), or a refusal that ends every session and API token of
 * the user (answered for the caller to throw, so that those ends commit). No decision changes
 * the panel's last admin (the rule of PUT /api/users): a panel without one could not be repaired
 * from its own screens.
 */
async function _applyGroupsDecision(
  tx: Tx,
  row: UserRow,
  decision: OidcAccessDecision,
  groups: string[],
  ctx: AuditContext,
): Promise<{ code: 'group_not_allowed' | 'group_refused'; details: Record<string, unknown> } | null> {
  const current = (await tx.select().from(users).where(eq(users.id, row.id)).get()) ?? row
  const wanted = decision.allowed ? (decision.role ?? current.role) : null
  if (current.role === 'admin' && wanted !== 'admin' && (await otherAdminCount(tx, row.id)) === 0) {
    const details = { user_id: row.id, email: row.email, reason: 'last_admin', would_be: wanted ?? 'refused', groups }
    await writeAudit({ ...ctx, actor: _MAPPING_ACTOR }, 'oidc_role_mapping_skipped', details, tx)
    return null
  }
  if (!decision.allowed) {
    // Lost access: every session (with its protected hosts' credentials) and API token of the user ends now.
    const sessionsEnded = await deleteSessionsOfUser(tx, row.id)
    const tokensRevoked = await revokeApiTokensOfUser(tx, row.id, _MAPPING_ACTOR)
    return {
      code: decision.code,
      details: { groups, refused_by: decision.matched, sessions_ended: sessionsEnded, api_tokens_revoked: tokensRevoked },
    }
  }
  if (wanted === current.role) return null
  // A role change is a privilege change (as in updateUser): the user's other sessions end, and a
  // demoted user's admin API tokens narrow to read; this login gets a fresh session.
  await tx.update(users).set({ role: wanted!, updatedAt: new Date().toISOString() }).where(eq(users.id, row.id))
  const sessionsEnded = await deleteSessionsOfUser(tx, row.id)
  const tokensNarrowed = current.role === 'admin' ? await narrowApiTokensOfUser(tx, row.id) : 0
  const details = {
    user_id: row.id,
    email: row.email,
    from: current.role,
    to: wanted,
    groups,
    matched: decision.matched,
    sessions_ended: sessionsEnded,
    ...(tokensNarrowed ? { api_tokens_narrowed: tokensNarrowed } : {}),
  }
  await writeAudit({ ...ctx, actor: _MAPPING_ACTOR }, 'oidc_role_change', details, tx)
  return null
}

/**
 * Any failure of the OIDC routes as an OidcFailure: a browser in the middle of
 * a login always lands on the login page, never on a JSON error. Unexpected
 * errors are logged (their message only) and become `internal_error`.
 */
export function asOidcFailure(err: unknown): OidcFailure {
  if (err instanceof OidcFailure) return err
  logger.error(`OIDC login failed unexpectedly: ${(err as Error)?.message ?? String(err)}`)
  return new OidcFailure('internal_error')
}

/** One audit row per refused OIDC login: `oidc_<code>`, with the allow-listed details. */
export async function auditOidcFailure(failure: OidcFailure, ctx: AuditContext): Promise<void> {
  const actor = typeof failure.details.email === 'string' ? failure.details.email : ctx.actor
  await writeAudit({ ...ctx, actor }, `oidc_${failure.code}`, { code: failure.code, ...failure.details })
}

/** The sweep: pending states past their 10 minutes. */
export function sweepExpiredOidcStates(): Promise<number> {
  return oidcPendingStates.sweepExpired()
}
