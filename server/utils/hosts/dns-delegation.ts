import { Resolver } from 'node:dns/promises'
import { eq } from 'drizzle-orm'
import { dnsProviders, hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { badRequest, notFound } from '../core/errors'
import { CHALLENGE_DELEGATION, challengeResolvers, delegationRecords, findDnsProvider } from './dns-catalogue'
import { openDnsCredentials } from './dns-credentials'

// Challenge delegation of a host (docs/tls.md, "Challenge delegation"): the CNAME
// records the operator creates in the host's own zone, and a lookup from the
// panel saying whether each is in place. Nothing is written: a read and a lookup.

const _LOOKUP_TIMEOUT_MS = 3000

export interface DelegationRecordCheck {
  name: string
  type: 'CNAME'
  value: string
  resolves: boolean
  /** The CNAME targets the lookup found (none: the name has no CNAME, or did not answer). */
  found: string[]
  detail: string
}

const _bare = (n: string) => n.toLowerCase().replace(/\.$/, '')

async function _lookup(resolver: Resolver, name: string): Promise<{ found: string[]; error: string | null }> {
  try {
    return { found: (await resolver.resolveCname(name)).map(_bare), error: null }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENODATA' || code === 'ENOTFOUND') return { found: [], error: null }
    return { found: [], error: `the lookup failed (${code ?? 'error'})` }
  }
}

/**
 * The records to create for a host whose DNS provider delegates its challenges,
 * each looked up: through the provider's resolvers when it has some (the
 * operator's propagation servers, or RFC 2136's authoritative server, which
 * serves private zones too), else
 * the panel's system resolver.
 */
export async function checkHostDelegation(id: number) {
  const host = await getDb().select().from(hosts).where(eq(hosts.id, id)).get()
  if (!host) throw notFound('host', id)
  const provider = host.tlsMode === 'auto' && host.tlsChallenge === 'dns' ? host.tlsDnsProvider : null
  const def = provider ? findDnsProvider(provider) : undefined
  const row = def ? await getDb().select().from(dnsProviders).where(eq(dnsProviders.name, def.name)).get() : undefined
  const credentials = row?.enabled ? openDnsCredentials(row) : null
  const zone = credentials?.[CHALLENGE_DELEGATION]
  if (!def || !credentials || !zone)
    throw badRequest(
      `host ${id} does not delegate its DNS challenge: give it DNS-01 with a provider that has a delegation zone (${CHALLENGE_DELEGATION} under DNS providers)`,
    )
  const resolver = new Resolver({ timeout: _LOOKUP_TIMEOUT_MS, tries: 1 })
  const servers = challengeResolvers(def, credentials)
  if (servers.length) resolver.setServers(servers)
  const records: DelegationRecordCheck[] = []
  for (const r of delegationRecords(host.domain, host.aliases, zone)) {
    const { found, error } = await _lookup(resolver, r.name)
    const resolves = found.includes(_bare(r.value))
    const detail = resolves
      ? `${r.name} is a CNAME to ${r.value}`
      : (error ?? (found.length ? `${r.name} is a CNAME to ${found.join(', ')}, not to ${r.value}` : `${r.name} has no CNAME yet`))
    records.push({ ...r, resolves, found, detail })
  }
  return {
    host_id: id,
    provider: def.name,
    zone: _bare(zone),
    asked: servers.length ? servers : ["the panel's system resolver"],
    ok: records.every((r) => r.resolves),
    records,
  }
}
