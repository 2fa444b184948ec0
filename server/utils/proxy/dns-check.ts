import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { z } from 'zod'
import { dnsProviders } from '../../../db/schema'
import { getDb, writeTransaction } from '../core/db'
import { badRequest, pathNotFound, upstreamFailed } from '../core/errors'
import { getConfig } from '../core/config'
import { writeAudit, type AuditContext } from '../core/audit'
import { redactText } from '../core/redact'
import { readRuntimeState, writeRuntimeState } from '../core/runtime-state'
import {
  CHALLENGE_DELEGATION,
  DNS_PROVIDER_CATALOGUE,
  PROPAGATION_TIMEOUT,
  delegationTarget,
  findDnsProvider,
  isDnsName,
  nameInZone,
  secretCredentialValues,
  type DnsProviderDefinition,
} from '../hosts/dns-catalogue'
import { openDnsCredentials, readDnsProviderCredentials } from '../hosts/dns-credentials'
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
  const answer = await runProxyDnsCheck(getConfig().proxy.adminUrl, request, _checkWaitMs(wait))
  const problem = _proxyProblem(answer, clean)
  const at = new Date().toISOString()
  const host = target ? body.host!.replace(/\.$/, '').replace(/^\*\./, '') : null
  if (problem) {
    await writeAudit(ctx, 'dns_provider_test', { name, zone, host, ok: false, outcome: 'proxy_unavailable' })
    throw upstreamFailed(problem)
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
  await writeTransaction(async (tx) => {
    await writeRuntimeState(tx, _stateKey(name), { ...check, credentials_fingerprint: found.fingerprint })
    await writeAudit(
      ctx,
      'dns_provider_test',
      { name, zone, host, ok: check.ok, failed_step: check.steps.find((s) => !s.ok)?.step ?? null },
      tx,
    )
  })
  return check
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
