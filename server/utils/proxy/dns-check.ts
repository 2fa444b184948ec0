import { createHash } from 'node:crypto'
import { Resolver } from 'node:dns/promises'
import { eq, like } from 'drizzle-orm'
import { z } from 'zod'
import { dnsProviders, runtimeState } from '../../../db/schema'
import { getDb, isDryRun, writeTransaction } from '../core/db'
import { logger } from '../core/log'
import { badRequest, pathNotFound, upstreamFailed } from '../core/errors'
import { getConfig } from '../core/config'
import { writeAudit, type AuditContext } from '../core/audit'
import { redactText } from '../core/redact'
import { readRuntimeState, writeRuntimeState } from '../core/runtime-state'
import {
  CHALLENGE_DELEGATION,
  DNS_PROVIDER_CATALOGUE,
  PROPAGATION_TIMEOUT,
  challengeResolvers,
  delegationTarget,
  findDnsProvider,
  isDnsName,
  nameInZone,
  secretCredentialValues,
  type DnsProviderDefinition,
} from '../hosts/dns-catalogue'
import { openDnsCredentials, readDnsProviderCredentials } from '../hosts/dns-credentials'
import { emitPanelEvent } from '../ops/events'
import { dnsChallengeOf } from './build/tls-acme'
import { runProxyDnsCheck } from './nodes/client'

// The DNS credentials check (docs/dns-check.md): the panel builds
// the provider object the ACME policies would hold (build/tls-acme.ts) from the
// stored credentials and asks node 1's proxy to write a TXT record with it, look
// for it at the zone's authoritative servers and remove it (the proxy's dnscheck
// module, one code path with the orders). The answer is the proxy's steps, in
// words; the last one is kept per provider and shown with it.

type Row = typeof dnsProviders.$inferSelect

/** The record the check writes, relative to the zone. */
export const DNS_CHECK_RECORD = '_panel-check'
/** How long the proxy looks for the record at the authoritative servers, unless the provider sets its propagation wait. */
const _PROPAGATION_SECONDS = 60
/** The whole check: the wait plus the provider's write and removal (60 s each at most in the proxy). */
const _checkWaitMs = (propagationSeconds: number) => (propagationSeconds + 2 * 60 + 10) * 1000

export const dnsCheckBody = z.strictObject({
  zone: z
    .string({ message: 'is required: the DNS zone the provider manages, such as example.com' })
    .trim()
    .toLowerCase()
    .refine((v) => isDnsName(v) && v.replace(/\.$/, '').includes('.'), {
      message: 'must be a DNS zone name such as example.com (the zone the provider manages)',
    }),
  host: z
    .string({ message: 'must be a host name such as www.example.com' })
    .trim()
    .toLowerCase()
    .refine((v) => isDnsName(v.replace(/^\*\./, '')) && v.replace(/\.$/, '').includes('.'), {
      message: 'must be a host name such as www.example.com (a name whose _acme-challenge is a CNAME into the delegation zone)',
    })
    .optional(),
})

const stepSchema = z.strictObject({
  step: z.enum(['authenticate', 'write', 'visible', 'delegation', 'remove']),
  ok: z.boolean(),
  detail: z.string(),
})
const _proxyAnswer = z.object({ ok: z.boolean(), steps: z.array(stepSchema) })

export const dnsCheckSchema = z.strictObject({
  at: z.string().describe('RFC 3339 timestamp, UTC'),
  zone: z.string(),
  host: z.string().nullable().describe('the delegated host name checked (its _acme-challenge CNAME); null: a plain check'),
  record: z.string().describe('the TXT record written and removed'),
  ok: z.boolean(),
  steps: z.array(stepSchema),
})
export type DnsCheck = z.infer<typeof dnsCheckSchema>

const _stateKey = (name: string) => `dns_provider_check/${name}`
/** Kept when node 1's proxy could not be asked: the provider was not checked, and why. */
const _pendingKey = (name: string) => `dns_provider_check_pending/${name}`
/** The stored credentials' fingerprint (of the sealed text): a check says nothing of credentials saved after it. */
const _fingerprint = (sealedOrPlaceholder: string) => createHash('sha256').update(sealedOrPlaceholder).digest('hex')

function _definition(name: string): DnsProviderDefinition {
  const def = findDnsProvider(name)
  if (!def)
    throw pathNotFound(`DNS provider "${name}" is not in the catalogue; use ${DNS_PROVIDER_CATALOGUE.map((p) => p.name).join(', ')}`)
  return def
}

/** The credentials to check: the stored ones (enabled or not: a test before enabling is the point), or provider_a's legacy variable. */
async function _credentials(
  def: DnsProviderDefinition,
  row: Row | undefined,
): Promise<{ credentials: Record<string, string>; fingerprint: string } | null> {
  const stored = openDnsCredentials(row)
  if (stored && row?.credentials) return { credentials: stored, fingerprint: _fingerprint(row.credentials) }
  const legacy = row ? undefined : (await readDnsProviderCredentials(getDb()))[def.name]
  if (legacy) return { credentials: legacy.credentials, fingerprint: _fingerprint(JSON.stringify(legacy.credentials)) }
  return null
}

export async function testDnsProvider(name: string, body: z.infer<typeof dnsCheckBody>, ctx: AuditContext): Promise<DnsCheck> {
  const outcome = await _runCheck(name, body, ctx)
  if ('pending' in outcome) throw upstreamFailed(outcome.pending)
  return outcome.check
}

/**
 * The one check (Test button, a host's "Check now", the automatic check on a
 * host save): asks node 1's proxy, keeps the result as the provider's last
 * check, audits it, and notifies when it fails. `{pending}`: the proxy could
 * not be asked (said in words), kept too so the provider shows it was not checked.
 */
async function _runCheck(
  name: string,
  body: z.infer<typeof dnsCheckBody>,
  ctx: AuditContext,
  limitMs = Number.POSITIVE_INFINITY,
): Promise<{ check: DnsCheck } | { pending: string }> {
  const def = _definition(name)
  const row = await getDb().select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
  const found = await _credentials(def, row)
  if (!found) throw badRequest(`credentials: ${name} has none stored; save its credentials under DNS providers, then test`)
  const zone = body.zone.replace(/\.$/, '')
  // A provider limited to a zone (rfc2136's `zone`) would be refused outside it: say so before asking.
  if (found.credentials.zone && !nameInZone(zone, found.credentials.zone))
    throw badRequest(`zone: ${zone} is outside the zone ${found.credentials.zone} that ${name} may update; test a zone inside it`)
  const target = _delegatedTarget(name, found.credentials, zone, body.host)
  const challenge = dnsChallengeOf(def.module, found.credentials) as { provider: Record<string, string>; resolvers?: string[] }
  // The order's own wait when the provider sets one: the check then proves what an order would see.
  const wait = Number(found.credentials[PROPAGATION_TIMEOUT] ?? _PROPAGATION_SECONDS)
  const request = {
    provider: challenge.provider,
    zone: `${zone}.`,
    name: target ? target.name : DNS_CHECK_RECORD,
    // Delegated: the proxy also proves that _acme-challenge.<host> is a CNAME to the record it wrote.
    ...(target ? { delegated_from: target.from } : {}),
    propagation_timeout: `${wait}s`,
    ...(challenge.resolvers ? { resolvers: challenge.resolvers } : {}),
    public_fields: def.public_fields,
  }
  // The proxy redacts every non-public value already; the panel does it again, as for all proxy text.
  const secrets = secretCredentialValues(def, found.credentials)
  // provider_a's legacy credentials are a placeholder the proxy expands from its environment,
  // and the cloudflare module quotes the expanded token when it refuses it.
  const legacyToken = getConfig().providerAApiToken
  if (def.name === 'provider_a' && legacyToken) secrets.push(legacyToken)
  const clean = (text: string) => redactText(text, secrets)
  const answer = await runProxyDnsCheck(getConfig().proxy.adminUrl, request, Math.min(_checkWaitMs(wait), limitMs))
  const problem = _proxyProblem(answer, clean)
  const at = new Date().toISOString()
  const host = target ? body.host!.replace(/\.$/, '').replace(/^\*\./, '') : null
  if (problem) {
    await writeTransaction(async (tx) => {
      await writeRuntimeState(tx, _pendingKey(name), { at, zone, host, cause: problem, credentials_fingerprint: found.fingerprint })
      await writeAudit(ctx, 'dns_provider_test', { name, zone, host, ok: false, outcome: 'proxy_unavailable' }, tx)
    })
    return { pending: problem }
  }
  const parsed = _proxyAnswer.parse(JSON.parse((answer as { body: string }).body))
  const check: DnsCheck = {
    at,
    zone,
    host,
    record: target ? target.record : `${DNS_CHECK_RECORD}.${zone}`,
    ok: parsed.ok,
    steps: parsed.steps.map((s) => ({ ...s, detail: clean(s.detail) })),
  }
  const before = await lastDnsCheck(name)
  await writeTransaction(async (tx) => {
    await writeRuntimeState(tx, _stateKey(name), { ...check, credentials_fingerprint: found.fingerprint })
    // A result replaces the "could not be asked" state.
    await tx.delete(runtimeState).where(eq(runtimeState.key, _pendingKey(name)))
    await writeAudit(
      ctx,
      'dns_provider_test',
      { name, zone, host, ok: check.ok, failed_step: check.steps.find((s) => !s.ok)?.step ?? null },
      tx,
    )
  })
  // A failure is a health problem (ops/problems.ts); notify when it starts, not on every repeat of the same failure.
  const failed = check.steps.find((s) => !s.ok)
  const wasFailing = before !== null && !before.ok && before.steps.find((s) => !s.ok)?.step === failed?.step
  if (!check.ok && !wasFailing)
    emitPanelEvent('health_degraded', {
      component: 'dns provider',
      provider: name,
      zone,
      host,
      failed_step: failed?.step ?? null,
      detail: failed?.detail ?? 'the check failed',
    })
  return { check }
}

/**
 * For a check of a delegated host: the record an order would write (the host's
 * name inside the delegation zone, as the ACME policy's override_domain), its
 * name relative to the checked zone, and the _acme-challenge name that must be a
 * CNAME to it. Null for a plain check. Throws 400 naming what to fix.
 */
function _delegatedTarget(
  provider: string,
  credentials: Record<string, string>,
  zone: string,
  host: string | undefined,
): { name: string; record: string; from: string } | null {
  if (host === undefined) return null
  const delegation = credentials[CHALLENGE_DELEGATION]
  if (!delegation)
    throw badRequest(
      `host: ${provider} has no delegation zone, so no host's challenge is delegated; save one (${CHALLENGE_DELEGATION}) or test without a host`,
    )
  const bare = host.replace(/\.$/, '').replace(/^\*\./, '')
  const record = delegationTarget(bare, delegation)
  if (!nameInZone(record, zone) || record === zone)
    throw badRequest(`zone: the delegated record ${record} is outside ${zone}; test the zone that holds the delegation zone ${delegation}`)
  return { name: record.slice(0, -(zone.length + 1)), record, from: `_acme-challenge.${bare}.` }
}

/** Why the proxy gave no check result, in words (null: it did). */
function _proxyProblem(answer: Awaited<ReturnType<typeof runProxyDnsCheck>>, clean: (t: string) => string): string | null {
  if (answer.outcome === 'unreachable') return `the DNS check needs node 1's proxy: ${answer.error}`
  if (answer.status === 404)
    return "node 1's proxy has no DNS check (POST /panel/dns-check): its Caddy build predates it; deploy the proxy image of this release"
  if (answer.status !== 200) {
    let text = answer.body.trim()
    try {
      text = JSON.parse(text).error ?? text
    } catch {
      /* plain text */
    }
    return `node 1's proxy refused the DNS check (HTTP ${answer.status}): ${clean(text).slice(0, 500)}`
  }
  try {
    if (_proxyAnswer.safeParse(JSON.parse(answer.body)).success) return null
  } catch {
    /* not JSON */
  }
  return "node 1's proxy answered the DNS check with something other than its steps; is PROXY_ADMIN_URL this release's proxy?"
}

/** The last check of a provider, or null when there is none or the credentials changed since. */
export async function lastDnsCheck(name: string): Promise<DnsCheck | null> {
  const saved = await readRuntimeState<DnsCheck & { credentials_fingerprint: string }>(_stateKey(name))
  if (!saved) return null
  const row = await getDb().select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
  const current = findDnsProvider(name) ? await _credentials(findDnsProvider(name)!, row) : null
  if (!current || current.fingerprint !== saved.credentials_fingerprint) return null
  const { credentials_fingerprint: _f, ...check } = saved
  // Checks kept before delegated checks existed have no host.
  return { ...check, host: check.host ?? null }
}

/** A provider's presentation with its last check (GET answers). */
export async function withLastDnsCheck<T extends { name: string }>(entry: T): Promise<T & { last_check: DnsCheck | null }> {
  return { ...entry, last_check: await lastDnsCheck(entry.name) }
}

// --- the check of a host's provider (docs/dns-check.md, "Before the first order") ---

/** The automatic check gives up after this long (a proxy that does not answer): the save goes on, the provider pending. */
export const AUTO_DNS_CHECK_LIMIT_MS = 90_000
const _SOA_LOOKUP_TIMEOUT_MS = 3000

const _pendingSchema = z.strictObject({
  at: z.string().describe('RFC 3339 timestamp, UTC'),
  zone: z.string(),
  host: z.string().nullable(),
  cause: z.string().describe('why the proxy could not be asked, in words'),
})
export type DnsCheckPending = z.infer<typeof _pendingSchema>

export const hostDnsCheckSchema = z.strictObject({
  provider: z.string(),
  state: z
    .enum(['passed', 'failed', 'pending', 'unchecked'])
    .describe(
      'passed/failed: the last check with the current credentials; pending: the last attempt could not ask the proxy; unchecked: never checked with these credentials',
    ),
  text: z.string().describe('the state in words, naming the provider and the failed step'),
  last_check: dnsCheckSchema.nullable(),
  pending: _pendingSchema.nullable(),
})
export type HostDnsCheck = z.infer<typeof hostDnsCheckSchema>

/** The last attempt that could not ask the proxy, when no result came after it (with the current credentials). */
export async function pendingDnsCheck(name: string): Promise<DnsCheckPending | null> {
  const saved = await readRuntimeState<DnsCheckPending & { credentials_fingerprint: string }>(_pendingKey(name))
  if (!saved) return null
  const def = findDnsProvider(name)
  const row = await getDb().select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
  const current = def ? await _credentials(def, row) : null
  if (!current || current.fingerprint !== saved.credentials_fingerprint) return null
  const { credentials_fingerprint: _f, ...pending } = saved
  return pending
}

/** The steps in words, for the sentences below ("failed at <words>"). */
const _STEP_WORDS: Record<DnsCheck['steps'][number]['step'], string> = {
  authenticate: 'its credentials',
  write: 'writing the TXT record',
  visible: "looking for the record at the zone's servers",
  delegation: 'the delegation CNAME',
  remove: 'removing the record',
}
const _stepWords = (step: DnsCheck['steps'][number] | undefined) => (step ? _STEP_WORDS[step.step] : 'a step')
/** Where each failure is fixed. */
const _FIX_WORDS: Record<DnsCheck['steps'][number]['step'], string> = {
  authenticate: 'its credentials under DNS providers',
  write: "its credentials' rights on the zone, or the zone",
  visible: "its propagation wait or servers under DNS providers, or the zone's servers",
  delegation: 'create the CNAME record the step names',
  remove: 'its rights to delete records; delete the record by hand',
}
/** A step's words inside a longer sentence: without its own final period. */
const _detailOf = (step: DnsCheck['steps'][number] | undefined) => (step?.detail ?? 'no detail').replace(/\.+$/, '')

/** A provider's check state for a host screen or a host answer, in words. */
export async function describeDnsCheck(name: string): Promise<HostDnsCheck> {
  const [last, pending] = await Promise.all([lastDnsCheck(name), pendingDnsCheck(name)])
  const failed = last?.steps.find((s) => !s.ok)
  const label = `DNS provider ${findDnsProvider(name)?.display_name ?? name}`
  if (pending && (!last || pending.at > last.at))
    return {
      provider: name,
      state: 'pending',
      text: `${label} was not checked: ${pending.cause.replace(/\.+$/, '')}. Use "Check now" once node 1's proxy answers`,
      last_check: last,
      pending,
    }
  if (!last)
    return {
      provider: name,
      state: 'unchecked',
      text: `${label} has not been checked with its current credentials; use "Check now"`,
      last_check: null,
      pending: null,
    }
  return {
    provider: name,
    state: last.ok ? 'passed' : 'failed',
    text: last.ok
      ? `${label} passed its check: a TXT record was written in ${last.zone}, seen at its servers and removed`
      : `${label} failed its check at ${_stepWords(failed)}: ${_detailOf(failed)}. ` +
        `Certificates of its hosts cannot be obtained until this is fixed (${_FIX_WORDS[failed?.step ?? 'authenticate']})`,
    last_check: last,
    pending: null,
  }
}

/**
 * What to check for a host: the delegation zone with the host (its CNAME too)
 * when the provider delegates, else the zone the provider is limited to, else the
 * host's zone, found as the nearest name with an SOA record (through the
 * provider's own resolvers when it declares some); the last two labels when no
 * lookup answers.
 */
async function _hostCheckBody(name: string, domain: string): Promise<z.infer<typeof dnsCheckBody>> {
  const def = _definition(name)
  const row = await getDb().select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
  const found = await _credentials(def, row)
  if (!found) throw badRequest(`credentials: ${name} has none stored; save its credentials under DNS providers, then check`)
  const bare = domain.toLowerCase().replace(/\.$/, '').replace(/^\*\./, '')
  const limited = found.credentials.zone?.replace(/\.$/, '')
  const delegation = found.credentials[CHALLENGE_DELEGATION]?.replace(/\.$/, '')
  if (delegation) return { zone: limited ?? delegation, host: bare }
  if (limited) return { zone: limited }
  const resolver = new Resolver({ timeout: _SOA_LOOKUP_TIMEOUT_MS, tries: 1 })
  const servers = challengeResolvers(def, found.credentials)
  if (servers.length) resolver.setServers(servers)
  const labels = bare.split('.')
  for (let i = 0; i < labels.length - 1; i++) {
    const candidate = labels.slice(i).join('.')
    try {
      if (await resolver.resolveSoa(candidate)) return { zone: candidate }
    } catch {
      /* not a zone apex (NODATA), or no answer: one label up */
    }
  }
  return { zone: labels.slice(-2).join('.') }
}

/** "Check now" on a host: the same check as "Test", in the zone the host's orders write. */
export async function checkDnsProviderForHost(name: string, domain: string, ctx: AuditContext, limitMs?: number): Promise<HostDnsCheck> {
  await _runCheck(name, await _hostCheckBody(name, domain), ctx, limitMs)
  return describeDnsCheck(name)
}

/** Whether a host save must check its provider first: no passed check with the current credentials (and not a dry run). */
export async function dnsCheckWanted(name: string): Promise<boolean> {
  if (!getConfig().dnsAutoCheck || isDryRun()) return false
  return !(await lastDnsCheck(name))?.ok
}

/**
 * The automatic check before a host's first DNS-01 order. It never fails the
 * save: a check that cannot be run is said in words (and kept as pending when
 * the proxy could not be asked).
 */
export async function checkDnsProviderBeforeFirstOrder(name: string, domain: string, ctx: AuditContext): Promise<HostDnsCheck> {
  try {
    return await checkDnsProviderForHost(name, domain, ctx, AUTO_DNS_CHECK_LIMIT_MS)
  } catch (err) {
    const cause = (err as Error).message
    logger.warn(`DNS provider ${name}: the check before the first order of ${domain} could not run: ${cause}`)
    return {
      ...(await describeDnsCheck(name)),
      state: 'pending',
      text: `DNS provider ${findDnsProvider(name)?.display_name ?? name} was not checked: ${cause}`,
    }
  }
}

/** Providers whose last check failed (error) or could not be run (warning), for ops/problems.ts. */
export async function dnsCheckProblems(): Promise<
  Array<{ provider: string; label: string; severity: 'error' | 'warning'; text: string; since: string }>
> {
  const out: Array<{ provider: string; label: string; severity: 'error' | 'warning'; text: string; since: string }> = []
  // Only providers with a kept check or attempt: one read, not one per catalogue entry.
  const keys = await getDb().select({ key: runtimeState.key }).from(runtimeState).where(like(runtimeState.key, 'dns_provider_check%'))
  const names = new Set(keys.map((k) => k.key.slice(k.key.indexOf('/') + 1)))
  for (const def of DNS_PROVIDER_CATALOGUE.filter((d) => names.has(d.name))) {
    const state = await describeDnsCheck(def.name)
    if (state.state === 'failed') {
      const step = state.last_check!.steps.find((s) => !s.ok)
      out.push({
        provider: def.name,
        label: def.display_name,
        severity: 'error',
        text: `its last check failed at ${_stepWords(step)}: ${_detailOf(step)}; certificates of its hosts cannot be obtained`,
        since: state.last_check!.at,
      })
    } else if (state.state === 'pending')
      out.push({
        provider: def.name,
        label: def.display_name,
        severity: 'warning',
        text: `not checked: ${state.pending!.cause.replace(/\.+$/, '')}`,
        since: state.pending!.at,
      })
  }
  return out
}
