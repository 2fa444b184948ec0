import { and, eq } from 'drizzle-orm'
import { z } from 'zod'
import { dnsProviders, hosts } from '../../../db/schema'
import { getDb, writeTransaction, type Executor } from '../core/db'
import { badRequest, pathNotFound } from '../core/errors'
import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { UNCHANGED } from '../core/settings'
import { writeAudit, systemActor, type AuditContext } from '../core/audit'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { openDnsCredentials, sealDnsCredentials } from './dns-credentials'
import {
  CHALLENGE_DELEGATION,
  DNS_PROVIDER_CATALOGUE,
  PROPAGATION_RESOLVERS,
  PROPAGATION_TIMEOUT,
  credentialRuleViolation,
  findDnsProvider,
  nameInZone,
  secretCredentialValues,
  type DnsProviderDefinition,
} from './dns-catalogue'

type Row = typeof dnsProviders.$inferSelect
const CREDENTIALS_LIMIT_BYTES = 4096

function _definition(name: string): DnsProviderDefinition {
  const def = findDnsProvider(name)
  if (!def)
    throw pathNotFound(`DNS provider "${name}" is not in the catalogue; use ${DNS_PROVIDER_CATALOGUE.map((p) => p.name).join(', ')}`)
  return def
}

/**
 * A catalogue entry joined with its stored state; never a credential. The
 * delegation zone is not one (a zone name the hosts' CNAMEs point to, shown on
 * every host that uses it): it is returned so that the form can show it and a
 * save of the form keeps it (an optional field left empty is removed).
 */
export function presentDnsProvider(def: DnsProviderDefinition, row: Row | undefined) {
  const stored = openDnsCredentials(row)
  const delegation = def.delegation === false ? undefined : stored?.[CHALLENGE_DELEGATION]
  const timeout = stored?.[PROPAGATION_TIMEOUT]
  return {
    name: def.name,
    display_name: def.display_name,
    enabled: row?.enabled ?? false,
    configured: !!row?.credentials,
    fields: def.fields.map((f) => ({ ...f })),
    proxy_module: def.proxy_module,
    docs_url: def.docs_url,
    challenge_delegation: delegation ?? null,
    // The propagation settings are not secrets either, and are shown back for the same reason.
    propagation_timeout: timeout ? Number(timeout) : null,
    propagation_resolvers: stored?.[PROPAGATION_RESOLVERS] ?? null,
  }
}

export async function listDnsProviders() {
  const rows = new Map((await getDb().select().from(dnsProviders)).map((r) => [r.name, r]))
  return DNS_PROVIDER_CATALOGUE.map((def) => presentDnsProvider(def, rows.get(def.name)))
}

export async function getDnsProvider(name: string) {
  const def = _definition(name)
  return presentDnsProvider(def, await getDb().select().from(dnsProviders).where(eq(dnsProviders.name, name)).get())
}

export const dnsProviderBody = z.strictObject({
  enabled: z.boolean({ message: 'enabled: must be true or false' }),
  credentials: z.record(z.string(), z.string({ message: 'every credential must be a string' })).optional(),
})

/** Applies the PUT rules of the spec to the stored credentials; throws 400 naming what to fix. */
export function mergeCredentials(
  def: DnsProviderDefinition,
  stored: Record<string, string> | null,
  given: Record<string, string> | undefined,
): Record<string, string> | null {
  if (given === undefined) return stored
  if (Buffer.byteLength(JSON.stringify(given)) > CREDENTIALS_LIMIT_BYTES)
    throw badRequest(`credentials: must be at most ${CREDENTIALS_LIMIT_BYTES} bytes`)
  const known = new Set(def.fields.map((f) => f.key))
  for (const key of Object.keys(given)) {
    if (!known.has(key)) throw badRequest(`credentials.${key}: unknown field for ${def.name}; its fields are ${[...known].join(', ')}`)
  }
  const merged: Record<string, string> = {}
  for (const field of def.fields) {
    const value = given[field.key]
    if (value === UNCHANGED) {
      if (stored?.[field.key] === undefined) throw badRequest(`credentials.${field.key}: "${UNCHANGED}" given but nothing is stored for it`)
      merged[field.key] = stored[field.key]!
    } else if (value !== undefined && value.trim() !== '') {
      if (/[\u0000-\u001f\u007f]/.test(value)) throw badRequest(`credentials.${field.key}: must not contain control characters`)
      merged[field.key] = value.trim()
    }
  }
  for (const field of def.fields) {
    if (field.required && merged[field.key] === undefined) throw badRequest(`credentials.${field.key}: is required for ${def.name}`)
  }
  // A value the proxy's module would refuse fails every later /load (quoting it): refuse it here.
  const violation = credentialRuleViolation(def, merged)
  if (violation) throw badRequest(violation)
  return merged
}

/** A zone given to a provider must still hold every name of the DNS-01 hosts that use it. */
async function _assertHostsInZone(exec: Executor, name: string, zone: string): Promise<void> {
  const users = await exec
    .select({ id: hosts.id, domain: hosts.domain, aliases: hosts.aliases })
    .from(hosts)
    .where(and(eq(hosts.tlsDnsProvider, name), eq(hosts.tlsMode, 'auto'), eq(hosts.tlsChallenge, 'dns')))
  for (const h of users) {
    const outside = [h.domain, ...h.aliases].find((n) => !nameInZone(n, zone))
    if (outside)
      throw badRequest(
        `credentials.zone: host ${h.id} uses ${name} for ${outside}, which is outside ${zone}; change that host first or give a zone that holds it`,
      )
  }
}

export async function updateDnsProvider(name: string, body: z.infer<typeof dnsProviderBody>, ctx: AuditContext) {
  const def = _definition(name)
  return writeTransaction(async (tx) => {
    const row = await tx.select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
    const credentials = mergeCredentials(def, openDnsCredentials(row), body.credentials)
    if (body.enabled && !credentials)
      throw badRequest(
        `credentials: ${name} has none stored; send ${def.fields
          .filter((f) => f.required)
          .map((f) => f.key)
          .join(', ')}`,
      )
    // Stored before the formats were checked (or imported from PROVIDER_A_API_TOKEN): enabling needs a valid one.
    const storedViolation = body.enabled && credentials && body.credentials === undefined ? credentialRuleViolation(def, credentials) : null
    if (storedViolation) throw badRequest(`${storedViolation}; the stored value does not, so send a new one`)
    // Untouched credentials keep their stored ciphertext; only new values are sealed.
    const sealed = body.credentials === undefined ? (row?.credentials ?? null) : credentials ? sealDnsCredentials(name, credentials) : null
    // Delegated, the hosts' names stay in their own zones: only the delegation zone must lie in `zone` (a format rule).
    if (body.enabled && credentials?.zone && !credentials[CHALLENGE_DELEGATION]) await _assertHostsInZone(tx, name, credentials.zone)
    const now = new Date().toISOString()
    await tx
      .insert(dnsProviders)
      .values({ name, enabled: body.enabled, credentials: sealed, updatedAt: now })
      .onConflictDoUpdate({ target: dnsProviders.name, set: { enabled: body.enabled, credentials: sealed, updatedAt: now } })
    await writeAudit(
      ctx,
      'dns_provider_update',
      {
        name,
        enabled: body.enabled,
        fields_sent: Object.keys(body.credentials ?? {}).sort(),
      },
      tx,
    )
    const outcome = await reconcileInTransaction(tx, ctx, `DNS provider ${name} updated`)
    const stored = await tx.select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
    return { ...presentDnsProvider(def, stored), reconcile: presentReconcile(outcome) }
  })
}

/**
 * Whether a host may use this provider for DNS-01 (spec Hosts rules 1–3):
 * in the catalogue, enabled with credentials, or provider_a with the legacy variable.
 * A provider limited to a zone (provider_c's `zone`) takes only names inside it:
 * the server would refuse the update, and only at issuance.
 */
export async function assertDnsProviderUsable(exec: Executor, name: string | null, hostNames: string[] = []): Promise<void> {
  if (!name) throw badRequest('tls_dns_provider: is required when tls_challenge is "dns"')
  if (!findDnsProvider(name))
    throw badRequest(`tls_dns_provider: "${name}" is not in the catalogue; use ${DNS_PROVIDER_CATALOGUE.map((p) => p.name).join(', ')}`)
  const row = await exec.select().from(dnsProviders).where(eq(dnsProviders.name, name)).get()
  if (row?.enabled && row.credentials) {
    const stored = openDnsCredentials(row)
    const zone = stored?.[CHALLENGE_DELEGATION] ? undefined : stored?.zone
    const outside = zone ? hostNames.find((n) => !nameInZone(n, zone)) : undefined
    if (outside)
      throw badRequest(
        `domain: ${outside} is outside the zone ${zone} that ${name} may update; use another provider or widen its zone under DNS providers`,
      )
    return
  }
  if (name === 'provider_a' && getConfig().providerAApiToken && !row) return
  throw badRequest(
    `tls_dns_provider: ${name} is ${row && !row.enabled ? 'disabled' : 'not configured'}; configure it under DNS providers first`,
  )
}

/** Legacy import: PROVIDER_A_API_TOKEN is stored (sealed) once when provider_a has no credentials. */
export async function importLegacyProviderAToken(): Promise<void> {
  const token = getConfig().providerAApiToken
  if (!token) return
  await writeTransaction(async (tx) => {
    const row = await tx.select().from(dnsProviders).where(eq(dnsProviders.name, 'provider_a')).get()
    if (row?.credentials) return
    const sealed = sealDnsCredentials('provider_a', { api_token: token })
    const now = new Date().toISOString()
    await tx
      .insert(dnsProviders)
      .values({ name: 'provider_a', enabled: true, credentials: sealed, updatedAt: now })
      .onConflictDoUpdate({ target: dnsProviders.name, set: { credentials: sealed, updatedAt: now } })
    await writeAudit(systemActor('legacy-import'), 'dns_provider_import', { name: 'provider_a', from: 'PROVIDER_A_API_TOKEN' }, tx)
    logger.info(
      'imported PROVIDER_A_API_TOKEN into the stored provider_a credentials (the variable is deprecated and will be removed in the next minor release)',
    )
    // Imported as it was (it worked for this deployment or never did), but the operator is told.
    const violation = credentialRuleViolation(findDnsProvider('provider_a')!, { api_token: token })
    if (violation)
      logger.warn(
        `PROVIDER_A_API_TOKEN ${violation.replace(/^credentials\.api_token: /, '')}: the proxy will refuse any host using provider_a until a valid token is saved under DNS providers`,
      )
  })
}

/** Every stored credential value that is secret (for redaction of proxy text), through the caller's transaction. */
export async function dnsCredentialSecrets(exec: Executor): Promise<string[]> {
  const out: string[] = []
  for (const row of await exec.select().from(dnsProviders)) {
    const def = findDnsProvider(row.name)
    const credentials = def ? openDnsCredentials(row) : null
    if (def && credentials) out.push(...secretCredentialValues(def, credentials))
  }
  return out
}
