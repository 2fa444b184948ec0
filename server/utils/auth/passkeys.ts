import { and, asc, eq } from 'drizzle-orm'
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server'
import { decodeClientDataJSON, isoBase64URL } from '@simplewebauthn/server/helpers'
import { passkeys, users } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { badRequest, conflict, notFound, tooManyRequests, unauthorized } from '../core/errors'
import { nowMs } from '../core/clock'
import { writeAudit, type AuditContext } from '../core/audit'
import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { beginLoginAttempt, assertTotpAllowed, recordTotpAttempt, settleLoginAttempt } from './attempts'
import { createPendingStore } from './pending-store'
import { createSession, presentSessionUser, type SessionUser } from './sessions'
import { totpPendingLogins } from './totp'

// Passkeys (WebAuthn) through @simplewebauthn/server, which parses the CBOR,
// the COSE keys and the attestation formats; this file keeps the panel's rules:
// - the relying party is PANEL_PUBLIC_URL: its host name is the RP ID and its
//   origin the only origin accepted, so a key registered for the panel works on
//   no other site and a response made for another page is refused;
// - every challenge is single use and lives 5 minutes: it is taken from the
//   pending store (keyed by the challenge itself, which the signed client data
//   carries) before the response is checked, whether the check then passes or
//   not, so a replayed response finds no challenge;
// - user verification (PIN, fingerprint) is required, so a passkey is two
//   factors in itself: a passkey login needs no TOTP code;
// - only the public key, the credential id and the signature counter are kept;
//   audit rows and logs name a key by its panel id and name only.

const _CHALLENGE_TTL_MS = 5 * 60_000
const _RP_NAME = 'Edge panel'
export const MAX_PASSKEYS_PER_USER = 20

/**
 * Anonymous login challenges not yet answered, per client address and in all. Anyone may ask
 * for one and each is kept 5 minutes, so without a bound one address could fill the store.
 */
export const MAX_OPEN_LOGIN_CHALLENGES_PER_SOURCE = 10
export const MAX_OPEN_LOGIN_CHALLENGES = 10_000

type _Purpose = 'register' | 'login' | 'second_factor'
interface _Challenge {
  purpose: _Purpose
  /** The signed-in user (register) or the user of the pending TOTP login (second_factor). */
  userId?: number
  /** Who asked for an anonymous login challenge, and until when it counts for them. */
  source?: { address: string; expiresAt: number }
}
const _challenges = createPendingStore<_Challenge>({ prefix: 'auth:passkey-challenge', ttlMs: _CHALLENGE_TTL_MS })

/** For the auth sweep: expired challenges go. */
export const passkeyChallenges = _challenges

/** The relying party: PANEL_PUBLIC_URL's host name (RP ID) and origin. */
export function relyingParty(): { rpID: string; origin: string } {
  const url = new URL(getConfig().publicUrl)
  return { rpID: url.hostname.replace(/^\[|\]$/g, ''), origin: url.origin }
}

export interface PresentedPasskey {
  id: number
  name: string
  transports: string[]
  created_at: string
  last_used_at: string | null
}

type _Row = typeof passkeys.$inferSelect

function _present(row: _Row): PresentedPasskey {
  return {
    id: row.id,
    name: row.name,
    transports: row.transports,
    created_at: new Date(row.createdAtMs).toISOString(),
    last_used_at: row.lastUsedAtMs === null ? null : new Date(row.lastUsedAtMs).toISOString(),
  }
}

async function _rowsOf(exec: Executor, userId: number): Promise<_Row[]> {
  return exec.select().from(passkeys).where(eq(passkeys.userId, userId)).orderBy(asc(passkeys.id)).all()
}

export async function listPasskeys(userId: number): Promise<PresentedPasskey[]> {
  return (await _rowsOf(getDb(), userId)).map(_present)
}

/** The challenge a response signed, read from its client data; '' when unreadable (then no record matches). */
function _challengeOf(clientDataJSON: string): string {
  try {
    const c = decodeClientDataJSON(clientDataJSON).challenge
    return typeof c === 'string' ? c : ''
  } catch {
    return ''
  }
}

/** Takes (consumes) the challenge the response answers, for this purpose; null when unknown, used, expired or for another use. */
async function _takeChallenge(clientDataJSON: string, purpose: _Purpose): Promise<_Challenge | null> {
  const record = await _challenges.take(_challengeOf(clientDataJSON))
  if (record?.source) _openLoginChallenges.release(record.source.address, record.source.expiresAt)
  return record && record.purpose === purpose ? record : null
}

/** Expiry times of the anonymous login challenges each address holds (memory of this process, as the store). */
const _openLoginChallenges = (() => {
  const bySource = new Map<string, number[]>()
  let total = 0
  const prune = (source: string, now: number) => {
    const open = bySource.get(source) ?? []
    const left = open.filter((expiresAt) => expiresAt > now)
    total -= open.length - left.length
    if (left.length) bySource.set(source, left)
    else bySource.delete(source)
    return left
  }
  return {
    /** Counts a new challenge for `source` (answers until when it counts); throws 429 when it, or the panel, holds too many. */
    open(source: string): number {
      const now = nowMs()
      const held = prune(source, now)
      if (held.length >= MAX_OPEN_LOGIN_CHALLENGES_PER_SOURCE)
        throw tooManyRequests(
          `${held.length} passkey sign-ins started from this address are not finished: finish one, or wait until the oldest expires`,
          Math.max(1, Math.ceil((held[0]! - now) / 1000)),
        )
      if (total >= MAX_OPEN_LOGIN_CHALLENGES) for (const s of [...bySource.keys()]) prune(s, now)
      if (total >= MAX_OPEN_LOGIN_CHALLENGES)
        throw tooManyRequests('too many passkey sign-ins are started and not finished on this panel: try again in a minute', 60)
      const expiresAt = now + _CHALLENGE_TTL_MS
      bySource.set(source, [...held, expiresAt])
      total++
      return expiresAt
    },
    /** The challenge was answered (or refused): its place is free. */
    release(source: string, expiresAt: number) {
      const open = bySource.get(source) ?? []
      const at = open.indexOf(expiresAt)
      if (at < 0) return // expired and pruned already
      open.splice(at, 1)
      total--
      if (!open.length) bySource.delete(source)
    },
  }
})()

async function _newChallenge(challenge: string, value: _Challenge): Promise<void> {
  await _challenges.put(challenge, value)
}

// ---------------------------------------------------------------- registration

/** Step 1: options for navigator.credentials.create(); the user's existing keys are excluded. */
export async function beginPasskeyRegistration(userId: number): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const db = getDb()
  const user = await db.select().from(users).where(eq(users.id, userId)).get()
  if (!user) throw notFound('user', userId)
  if (user.provider !== 'local') throw conflict('passkeys are for accounts of the panel; this account signs in through single sign-on')
  const existing = await _rowsOf(db, userId)
  if (existing.length >= MAX_PASSKEYS_PER_USER)
    throw conflict(`an account may have at most ${MAX_PASSKEYS_PER_USER} passkeys: remove one first`)
  const { rpID } = relyingParty()
  const options = await generateRegistrationOptions({
    rpName: _RP_NAME,
    rpID,
    userName: user.email,
    userDisplayName: user.name || user.email,
    // The user handle the authenticator stores: the panel's user id, nothing personal.
    userID: new TextEncoder().encode(`panel-user:${user.id}`),
    attestationType: 'none',
    excludeCredentials: existing.map((r) => ({ id: r.credentialId, transports: r.transports as AuthenticatorTransport[] })),
    // Discoverable, so the key can sign in without an email; verified, so it is two factors in itself.
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  })
  await _newChallenge(options.challenge, { purpose: 'register', userId })
  return options
}

/** Step 2: the authenticator's answer, checked and stored under `name`. */
export async function finishPasskeyRegistration(
  userId: number,
  input: { name: string; response: RegistrationResponseJSON },
  ctx: AuditContext,
): Promise<PresentedPasskey> {
  const pending = await _takeChallenge(input.response.response.clientDataJSON, 'register')
  if (!pending || pending.userId !== userId)
    throw badRequest('response: the registration expired, was already used or was started by another account; start again')
  const { rpID, origin } = relyingParty()
  let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>
  try {
    verified = await verifyRegistrationResponse({
      response: input.response,
      expectedChallenge: _challengeOf(input.response.response.clientDataJSON),
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: true,
    })
  } catch (err) {
    throw badRequest(`response: the passkey's answer does not verify (${_reason(err)})`)
  }
  if (!verified.verified || !verified.registrationInfo) throw badRequest("response: the passkey's answer does not verify")
  const { credential } = verified.registrationInfo
  return writeTransaction(async (tx) => {
    const taken = await tx.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.credentialId, credential.id)).get()
    if (taken) throw conflict('this passkey is already registered')
    const row = await tx
      .insert(passkeys)
      .values({
        userId,
        credentialId: credential.id,
        publicKey: isoBase64URL.fromBuffer(credential.publicKey),
        counter: credential.counter,
        transports: (credential.transports ?? []).slice(0, 8),
        name: input.name,
        createdAtMs: Date.now(),
        lastUsedAtMs: null,
      })
      .returning()
      .get()
    await writeAudit(ctx, 'passkey_register', { user_id: userId, passkey_id: row!.id, name: row!.name }, tx)
    return _present(row!)
  })
}

/** The user's own passkey `id`; another user's is as missing as one that does not exist (404). */
async function _ownPasskey(tx: Tx, userId: number, id: number) {
  const row = await tx
    .select()
    .from(passkeys)
    .where(and(eq(passkeys.id, id), eq(passkeys.userId, userId)))
    .get()
  if (!row) throw notFound('passkey', id)
  return row
}

export async function renamePasskey(userId: number, id: number, name: string, ctx: AuditContext): Promise<PresentedPasskey> {
  return writeTransaction(async (tx) => {
    const row = await _ownPasskey(tx, userId, id)
    const updated = await tx.update(passkeys).set({ name }).where(eq(passkeys.id, id)).returning().get()
    await writeAudit(ctx, 'passkey_rename', { user_id: userId, passkey_id: id, from: row.name, to: name }, tx)
    return _present(updated!)
  })
}

export async function deletePasskey(userId: number, id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const row = await _ownPasskey(tx, userId, id)
    await tx.delete(passkeys).where(eq(passkeys.id, id))
    await writeAudit(ctx, 'passkey_delete', { user_id: userId, passkey_id: id, name: row.name }, tx)
  })
}

/** User deletion: foreign keys are off here, so the user's keys go by hand (users.ts). */
export async function deletePasskeysOfUser(exec: Executor, userId: number): Promise<number> {
  const r = await exec.delete(passkeys).where(eq(passkeys.userId, userId))
  return r.rowsAffected
}

// ---------------------------------------------------------------- authentication

/** Options for a login without an email: any discoverable key of this panel may answer. */
export async function beginPasskeyLogin(remoteIp: string | null): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const address = remoteIp ?? 'unknown'
  const expiresAt = _openLoginChallenges.open(address)
  const options = await generateAuthenticationOptions({ rpID: relyingParty().rpID, userVerification: 'required' })
  await _newChallenge(options.challenge, { purpose: 'login', source: { address, expiresAt } })
  return options
}

/** Options for the second step of a password login waiting for TOTP: only that user's keys. */
export async function beginPasskeySecondFactor(pendingToken: string | undefined): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const pending = pendingToken ? await totpPendingLogins.peek(pendingToken) : null
  if (!pending) throw _pendingGone()
  const rows = await _rowsOf(getDb(), pending.userId)
  if (!rows.length) throw conflict('this account has no passkey: enter the code from the authenticator app, or a recovery code')
  const options = await generateAuthenticationOptions({
    rpID: relyingParty().rpID,
    userVerification: 'required',
    allowCredentials: rows.map((r) => ({ id: r.credentialId, transports: r.transports as AuthenticatorTransport[] })),
  })
  await _newChallenge(options.challenge, { purpose: 'second_factor', userId: pending.userId })
  return options
}

const _pendingGone = () => unauthorized('the second step has expired or was already used: log in with your password again')
const _refused = () => unauthorized('passkey not accepted: use a passkey registered for this panel, or sign in with your password')

function _reason(err: unknown): string {
  // The library's messages name the failed check (origin, RP ID, challenge, counter, signature); never key material.
  const m = err instanceof Error ? err.message : String(err)
  return m.replace(/\s+/g, ' ').slice(0, 200)
}

/** Checks an assertion against the stored key and moves its counter on; throws nothing, answers false on any failure. */
async function _verifyAssertion(
  row: _Row,
  response: AuthenticationResponseJSON,
  challenge: string,
): Promise<{ ok: boolean; reason?: string }> {
  const { rpID, origin } = relyingParty()
  try {
    const r = await verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: true,
      credential: {
        id: row.credentialId,
        publicKey: isoBase64URL.toBuffer(row.publicKey),
        counter: row.counter,
        transports: row.transports as AuthenticatorTransport[],
      },
    })
    if (!r.verified) return { ok: false, reason: 'signature' }
    // Conditional on the counter read, so that two uses racing cannot both move it.
    const moved = await getDb()
      .update(passkeys)
      .set({ counter: r.authenticationInfo.newCounter, lastUsedAtMs: Date.now() })
      .where(and(eq(passkeys.id, row.id), eq(passkeys.counter, row.counter)))
    return moved.rowsAffected === 1 ? { ok: true } : { ok: false, reason: 'counter raced' }
  } catch (err) {
    return { ok: false, reason: _reason(err) }
  }
}

async function _rowByCredentialId(id: unknown): Promise<_Row | undefined> {
  if (typeof id !== 'string' || !id || id.length > 1400) return undefined
  return getDb().select().from(passkeys).where(eq(passkeys.credentialId, id)).get()
}

export interface PasskeyLoginResult {
  user: SessionUser
  token: string
  expiresAtMs: number
}

/**
 * A login with a passkey alone. Throttled and recorded like a password login (attempts.ts):
 * the attempt counts against the key's account (or, for an unknown key, the source address
 * only) before the signature is checked, and turns into a success once it verifies.
 */
export async function loginWithPasskey(response: AuthenticationResponseJSON, ctx: AuditContext): Promise<PasskeyLoginResult> {
  const challenge = _challengeOf(response.response.clientDataJSON)
  const row = await _rowByCredentialId(response.id)
  const owner = row ? await getDb().select().from(users).where(eq(users.id, row.userId)).get() : undefined
  const label = owner?.email ?? '(unknown passkey)'
  const attemptId = await beginLoginAttempt(label, ctx.remoteIp ?? null)
  const pending = await _takeChallenge(response.response.clientDataJSON, 'login')
  const fail = async (reason: string) => {
    await writeAudit({ ...ctx, actor: label }, 'login_failed', { ...(owner ? { user_id: owner.id } : {}), method: 'passkey', reason })
    logger.info(`passkey login refused: ${reason}`)
    return _refused()
  }
  if (!pending) throw await fail('challenge expired, used or unknown')
  if (!row || !owner) throw await fail('unknown passkey')
  if (owner.provider !== 'local') throw await fail('account signs in through single sign-on')
  const check = await _verifyAssertion(row, response, challenge)
  if (!check.ok) throw await fail(check.reason ?? 'not verified')
  return writeTransaction(async (tx) => {
    await settleLoginAttempt(tx, attemptId)
    const session = await createSession(tx, owner.id, ctx)
    await writeAudit(
      { ...ctx, actor: owner.email },
      'login',
      { user_id: owner.id, provider: 'local', method: 'passkey', passkey_id: row.id },
      tx,
    )
    return { user: presentSessionUser(owner), ...session }
  })
}

/**
 * The second step of a password login with TOTP, done with one of the user's passkeys instead
 * of a code: the same throttle and attempt rows as TOTP codes, the pending login used up once.
 */
export async function completeSecondFactorWithPasskey(
  pendingToken: string | undefined,
  response: AuthenticationResponseJSON,
  ctx: AuditContext,
): Promise<PasskeyLoginResult> {
  const pendingLogin = pendingToken ? await totpPendingLogins.peek(pendingToken) : null
  if (!pendingLogin) throw _pendingGone()
  const userId = pendingLogin.userId
  const remoteIp = ctx.remoteIp ?? null
  await assertTotpAllowed(userId, remoteIp)
  const owner = await getDb().select().from(users).where(eq(users.id, userId)).get()
  if (!owner?.totpEnabled) throw _pendingGone()
  const challenge = _challengeOf(response.response.clientDataJSON)
  const record = await _takeChallenge(response.response.clientDataJSON, 'second_factor')
  const row = await _rowByCredentialId(response.id)
  let reason: string | undefined
  if (!record || record.userId !== userId) reason = 'challenge expired, used or for another login'
  // Another user's key never completes this user's login, even with a valid signature.
  else if (!row || row.userId !== userId) reason = 'not a passkey of this account'
  else reason = (await _verifyAssertion(row, response, challenge)).reason
  if (reason !== undefined) {
    await writeTransaction(async (tx) => {
      await recordTotpAttempt(tx, { userId, remoteIp, success: false })
      await writeAudit({ ...ctx, actor: owner.email }, 'login_totp_failed', { user_id: userId, method: 'passkey', reason }, tx)
    })
    throw unauthorized('passkey not accepted: use a passkey of this account, the code from the authenticator app, or a recovery code')
  }
  return writeTransaction(async (tx) => {
    // Single use: a second request racing with the same pending cookie gets nothing.
    if (!(await totpPendingLogins.take(pendingToken!))) throw _pendingGone()
    await recordTotpAttempt(tx, { userId, remoteIp, success: true })
    const session = await createSession(tx, userId, ctx)
    await writeAudit(
      { ...ctx, actor: owner.email },
      'login',
      { user_id: userId, provider: 'local', second_factor: 'passkey', passkey_id: row!.id },
      tx,
    )
    return { user: presentSessionUser(owner), ...session }
  })
}
