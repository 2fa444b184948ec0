import { and, desc, eq, inArray, ne } from 'drizzle-orm'
import { z } from 'zod'
import { countryBans, countryJobs, whitelistEntries } from '../../../db/schema'
import { getDb, runWrite, writeTransaction } from '../core/db'
import { badRequest, notFound, pathNotFound, upstreamUnavailable } from '../core/errors'
import { writeAudit, systemActor, type AuditContext } from '../core/audit'
import { INSTANCE_ID, acquireLease, releaseLease } from '../core/lease'
import { logger } from '../core/log'
import { redactSecrets } from '../core/redact'
import { safeText } from '../core/validate'
import { geoVersion, openGeoReader } from '../geo/readers'
import { listCountryNets } from '../geo/walker'
import { rollUpNets } from '../geo/rollup'
import { formatNet, parseCidr, subtractNetworks } from '../geo/ip'
import { banAlert, deleteDecisionsMatching, fetchActiveDecisions, machineRequest } from './lapi'
import { invalidateDecisionCache } from './decisions'

// Country bans: the bouncer ignores scope Country, so a ban is expanded into
// Range decisions (one alert per chunk of 500), tagged with origin
// panel-country-<CC> so one DELETE ?origin= revokes them all.

export const CHUNK_SIZE = 500
const _LEASE = 'country-expansion-worker'
const _LEASE_TTL_MS = 60_000
/** How often a running job records its progress and renews its lease (and after its last chunk). */
const _PROGRESS_EVERY_MS = 1_000
/**
 * Chunks posted at once: the local API reads and checks one POST while it
 * writes another (the most fragmented country's 119 chunks: 1.8-2.0 s one at
 * a time, 1.3 s two at a time; three gained nothing more).
 */
export const CHUNKS_IN_FLIGHT = 2
export const originOf = (cc: string) => `panel-country-${cc}`

const _regions = new Intl.DisplayNames(['en'], { type: 'region' })
/** Region codes ICU names that are not countries in ISO 3166-1. */
const _NOT_COUNTRIES = new Set(['EU', 'EZ', 'UN', 'QO', 'XA', 'XB', 'ZZ'])
/**
 * `raw` as an upper-case ISO 3166-1 alpha-2 code. Where a path names the country (`in: 'path'`),
 * two letters that name no country are a missing row, 404 ("a missing row 404", like an unknown
 * id); a query value that is no country is bad input, 400.
 */
export function normalizeCountryCode(raw: string, where: 'path' | 'query' = 'query'): string {
  const cc = raw.trim().toUpperCase()
  let known = false
  try {
    known = /^[A-Z]{2}$/.test(cc) && !_NOT_COUNTRIES.has(cc) && _regions.of(cc) !== cc
  } catch {
    known = false
  }
  if (!known) {
    const problem = `country code: "${raw}" is not an ISO 3166-1 alpha-2 code such as FR`
    throw where === 'path' && /^[A-Z]{2}$/.test(cc) ? pathNotFound(problem) : badRequest(problem)
  }
  return cc
}

export const expandBody = z.strictObject({
  duration: z
    .string()
    .regex(/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/, 'must be a Go duration such as 24h or 8760h (no days: use hours)')
    .refine((d) => !/^0+(\D|$)/.test(d), 'must be longer than zero'),
  reason: safeText(200).optional(),
})

type JobRow = typeof countryJobs.$inferSelect
export function presentJob(j: JobRow) {
  return {
    id: j.id,
    country_code: j.countryCode,
    state: j.state,
    chunks_total: j.chunksTotal,
    chunks_done: j.chunksDone,
    chunks_failed: j.chunksFailed,
    cidr_committed: j.cidrCommitted,
    requested_count: j.requestedCount,
    duration: j.duration,
    reason: j.reason,
    error_message: j.errorMessage,
    created_at: j.createdAt,
    started_at: j.startedAt,
    completed_at: j.completedAt,
    created_by: j.createdBy,
  }
}

export async function submitExpansion(rawCc: string, body: z.infer<typeof expandBody>, ctx: AuditContext) {
  const cc = normalizeCountryCode(rawCc, 'path')
  if (!openGeoReader('country'))
    throw upstreamUnavailable('country database', 'country.mmdb is not loaded; run POST /api/geoip/refresh first')
  const job = await writeTransaction(async (tx) => {
    const row = (await tx
      .insert(countryJobs)
      .values({
        countryCode: cc,
        duration: body.duration,
        reason: body.reason ?? '',
        createdAt: new Date().toISOString(),
        createdBy: ctx.actor,
        instanceId: INSTANCE_ID,
      })
      .returning()
      .get())!
    await writeAudit(ctx, 'country_expand_requested', { job_id: row.id, country_code: cc, duration: body.duration }, tx)
    return row
  })
  return presentJob(job)
}

export async function getJob(id: number) {
  const row = await getDb().select().from(countryJobs).where(eq(countryJobs.id, id)).get()
  if (!row) throw notFound('job', id)
  return presentJob(row)
}

export const jobsQuery = z.strictObject({
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 code such as FR')
    .optional(),
  limit: z.coerce.number().int('must be an integer').min(1, 'must be at least 1').max(200, 'must be at most 200').default(20),
})

export async function listJobs(country: string | undefined, limit: number) {
  const where = country ? eq(countryJobs.countryCode, normalizeCountryCode(country)) : undefined
  return (
    await getDb().select().from(countryJobs).where(where).orderBy(desc(countryJobs.createdAt), desc(countryJobs.id)).limit(limit)
  ).map(presentJob)
}

/** At boot: jobs a previous panel process left pending or running can never finish. */
export async function failJobsOfPreviousInstances(): Promise<number> {
  const r = await runWrite(() =>
    getDb()
      .update(countryJobs)
      .set({ state: 'failed', errorMessage: 'panel restarted', completedAt: new Date().toISOString() })
      .where(and(inArray(countryJobs.state, ['pending', 'running']), ne(countryJobs.instanceId, INSTANCE_ID))),
  )
  return r.rowsAffected
}

async function _update(id: number, set: Partial<JobRow>) {
  await runWrite(() => getDb().update(countryJobs).set(set).where(eq(countryJobs.id, id)))
}

function _alertFor(cc: string, chunk: string[], index: number, total: number, duration: string) {
  return banAlert({
    scenario: `panel/country-ban:${cc}`,
    message: `country ban ${cc} chunk ${index + 1}/${total}`,
    origin: originOf(cc),
    scope: 'Range',
    values: chunk,
    duration,
  })
}

/**
 * POST one chunk's alert. A chunk that fails is tried once more after a short
 * pause: a busy local API (seen once in a CI run, cause not caught) should not
 * leave a hole in a country ban. Should the first attempt have landed after
 * all, the range is banned twice; a re-expansion or a revoke removes both.
 */
async function _commitChunkWithOneRetry(cc: string, alert: ReturnType<typeof _alertFor>, label: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await machineRequest('POST', 'v1/alerts', { body: alert })
      if (res.status !== 201)
        throw new Error(await redactSecrets(`local API answered ${res.status}: ${JSON.stringify(res.json).slice(0, 200)}`))
      return
    } catch (err) {
      if (attempt >= 2) throw err
      logger.warn(`country ${cc}: chunk ${label} failed, trying once more: ${_describe(err)}`)
      await new Promise((r) => setTimeout(r, 500))
    }
  }
}

/** Country CIDRs with every whitelisted address or range cut out of them. */
export function excludeWhitelisted(cidrs: string[], whitelist: string[]): string[] {
  if (!whitelist.length) return cidrs
  const holes = whitelist.map(parseCidr)
  return cidrs.flatMap((c) => subtractNetworks(parseCidr(c), holes).map(formatNet))
}

/** The country's ranges, whitelisted addresses cut out, in chunks of CHUNK_SIZE. */
async function _chunksOf(reader: NonNullable<ReturnType<typeof openGeoReader>>, cc: string): Promise<string[][]> {
  const rolled = rollUpNets(listCountryNets(reader, cc))
  // Never a range that contains a whitelisted address: split around it.
  const cidrs = excludeWhitelisted(
    rolled.cidrs,
    (await getDb().select({ value: whitelistEntries.value }).from(whitelistEntries)).map((r) => r.value),
  )
  const chunks: string[][] = []
  for (let i = 0; i < cidrs.length; i += CHUNK_SIZE) chunks.push(cidrs.slice(i, i + CHUNK_SIZE))
  return chunks
}

interface _PostOutcome {
  /** The ranges of the chunks that landed, in chunk order. */
  committed: string[]
  failed: number
  firstError?: string
}

/**
 * Posts every chunk, CHUNKS_IN_FLIGHT at a time, recording progress and renewing the lease as it
 * goes; throws when the lease was lost (another panel's worker took the job).
 */
async function _postChunks(job: JobRow, chunks: string[][], firstErrorBefore: string | undefined): Promise<_PostOutcome> {
  const cc = job.countryCode
  let firstError = firstErrorBefore
  const landed = chunks.map(() => false)
  let next = 0,
    finished = 0,
    failed = 0,
    committedCount = 0,
    progressAtMs = Date.now()
  let stopped: unknown
  let reporting: Promise<void> | null = null
  const reportProgress = async () => {
    progressAtMs = Date.now()
    await _update(job.id, { chunksDone: finished - failed, chunksFailed: failed, cidrCommitted: committedCount })
    // The lease expired during a slow chunk and another panel's worker took it:
    // two workers must never expand at once, so this one stops (the job fails, saying why).
    if (!(await acquireLease(_LEASE, _LEASE_TTL_MS)))
      throw new Error(`stopped after chunk ${finished}/${chunks.length}: another panel took over the country expansion lease`)
  }
  const postChunks = async () => {
    while (stopped === undefined && next < chunks.length) {
      const i = next++
      const chunk = chunks[i]!
      try {
        await _commitChunkWithOneRetry(cc, _alertFor(cc, chunk, i, chunks.length, job.duration), `${i + 1}/${chunks.length}`)
        landed[i] = true
        committedCount += chunk.length
      } catch (err) {
        failed++
        firstError ??= _describe(err)
        logger.warn(`country ${cc}: chunk ${i + 1}/${chunks.length} failed: ${_describe(err)}`)
      }
      finished++
      // Progress and the lease once a second, not after each of a large country's chunks:
      // two panel writes per chunk cost the job half as much again as its chunks.
      if (reporting || Date.now() - progressAtMs < _PROGRESS_EVERY_MS) continue
      reporting = reportProgress().catch((err) => {
        stopped ??= err
      })
      await reporting
      reporting = null
    }
  }
  await Promise.all(Array.from({ length: CHUNKS_IN_FLIGHT }, postChunks))
  if (stopped !== undefined) throw stopped
  await reportProgress() // after the last chunk
  // In chunk order, whichever chunk landed first.
  return { committed: chunks.filter((_, i) => landed[i]).flat(), failed, firstError }
}

/** The ban row, the completed job and its audit row, in one transaction. */
async function _recordCompleted(job: JobRow, mmdbVersion: string, total: number, outcome: _PostOutcome, done: string): Promise<void> {
  const { committed, failed, firstError } = outcome
  await writeTransaction(async (tx) => {
    await tx
      .insert(countryBans)
      .values({
        countryCode: job.countryCode,
        cidrs: committed,
        cidrCount: committed.length,
        mmdbVersion,
        state: 'active',
        duration: job.duration,
        createdAt: done,
        updatedAt: done,
      })
      .onConflictDoUpdate({
        target: countryBans.countryCode,
        set: { cidrs: committed, cidrCount: committed.length, mmdbVersion, state: 'active', duration: job.duration, updatedAt: done },
      })
    // Some chunks failing still completes the job: what was committed is tracked and enforced.
    await tx
      .update(countryJobs)
      .set({
        state: 'completed',
        completedAt: done,
        errorMessage: failed ? `${failed} of ${total} chunks failed: ${firstError}` : '',
      })
      .where(eq(countryJobs.id, job.id))
    await writeAudit(
      systemActor('country-expansion'),
      'country_expand_completed',
      { job_id: job.id, country_code: job.countryCode, cidr_committed: committed.length, chunks_failed: failed },
      tx,
    )
  })
}

/** Runs one job to its end; never throws (the job row records the outcome). */
async function _runJob(job: JobRow): Promise<void> {
  const cc = job.countryCode
  const started = new Date().toISOString()
  await _update(job.id, { state: 'running', startedAt: started })
  try {
    const reader = openGeoReader('country')
    if (!reader) throw new Error('country.mmdb is not loaded')
    const chunks = await _chunksOf(reader, cc)
    await _update(job.id, { chunksTotal: chunks.length, requestedCount: chunks.reduce((n, c) => n + c.length, 0) })
    let firstError: string | undefined
    // A re-expansion replaces the previous decisions instead of doubling them.
    try {
      await deleteDecisionsMatching({ origin: originOf(cc) })
    } catch (err) {
      firstError = _describe(err)
    }
    const outcome = await _postChunks(job, chunks, firstError)
    await invalidateDecisionCache()
    const done = new Date().toISOString()
    if (chunks.length && outcome.failed === chunks.length) {
      await _update(job.id, {
        state: 'failed',
        completedAt: done,
        errorMessage: `all ${chunks.length} chunks failed: ${outcome.firstError}`,
      })
      await writeAudit(systemActor('country-expansion'), 'country_expand_failed', { job_id: job.id, country_code: cc })
      return
    }
    await _recordCompleted(job, geoVersion(reader), chunks.length, outcome, done)
  } catch (err) {
    await _update(job.id, { state: 'failed', completedAt: new Date().toISOString(), errorMessage: _describe(err) })
  }
}

function _describe(err: unknown): string {
  return (err as Error).message || String(err)
}

/** The worker: holds the global lease while pending jobs remain, one job at a time, oldest first. */
export async function runPendingJobs(): Promise<number> {
  if (!(await acquireLease(_LEASE, _LEASE_TTL_MS))) return 0
  let ran = 0
  try {
    for (;;) {
      const next = await getDb().select().from(countryJobs).where(eq(countryJobs.state, 'pending')).orderBy(countryJobs.id).limit(1).get()
      if (!next) break
      await _runJob(next)
      ran++
      // A job may outlast the lease: without it, the next job is left to the panel that holds it.
      if (!(await acquireLease(_LEASE, _LEASE_TTL_MS))) break
    }
  } finally {
    await releaseLease(_LEASE)
  }
  return ran
}

export async function listCountryBans() {
  return (await getDb().select().from(countryBans).orderBy(countryBans.countryCode)).map((b) => ({
    country_code: b.countryCode,
    cidrs: b.cidrs,
    cidr_count: b.cidrCount,
    mmdb_version: b.mmdbVersion,
    state: b.state,
    duration: b.duration,
    created_at: b.createdAt,
    updated_at: b.updatedAt,
    checked_at: b.checkedAt,
  }))
}

/** One local-API call removes every decision of the country's origin; then the record goes. */
export async function revokeCountry(rawCc: string, ctx: AuditContext) {
  const cc = normalizeCountryCode(rawCc, 'path')
  const removed = await deleteDecisionsMatching({ origin: originOf(cc) })
  const hadRecord = await writeTransaction(async (tx) => {
    const r = await tx.delete(countryBans).where(eq(countryBans.countryCode, cc))
    await writeAudit(ctx, 'country_ban_delete', { country_code: cc, removed_decision_count: removed }, tx)
    return r.rowsAffected > 0
  })
  await invalidateDecisionCache()
  if (!hadRecord && removed === 0) throw notFound('country ban', cc)
  return { country_code: cc, removed_decision_count: removed }
}

/** The reconciler: a record whose decision count no longer matches the engine's is drifted. */
export async function reconcileCountryBans(): Promise<void> {
  const busy = new Set(
    (
      await getDb()
        .select({ cc: countryJobs.countryCode })
        .from(countryJobs)
        .where(inArray(countryJobs.state, ['pending', 'running']))
    ).map((r) => r.cc),
  )
  for (const ban of await getDb().select().from(countryBans)) {
    if (busy.has(ban.countryCode)) continue
    const actual = (await fetchActiveDecisions({ origins: originOf(ban.countryCode), scopes: 'range' })).length
    const state = actual === ban.cidrCount ? 'active' : 'drifted'
    const now = new Date().toISOString()
    await writeTransaction(async (tx) => {
      await tx.update(countryBans).set({ state, checkedAt: now }).where(eq(countryBans.countryCode, ban.countryCode))
      if (state !== ban.state)
        await writeAudit(
          systemActor('country-reconciler'),
          `country_ban_${state}`,
          { country_code: ban.countryCode, tracked: ban.cidrCount, actual },
          tx,
        )
    })
  }
}
