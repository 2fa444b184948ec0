import { eq } from 'drizzle-orm'
import { hostNames, hosts } from '../../../db/schema'
import { getDb } from '../core/db'
import { hostnameOfHostValue } from './forward-credentials'

// Who may enter a protected host (docs/access-control.md, "Who may enter a protected host"):
// /auth/forward admits a signed-in user when the host's auth_allowed_users and auth_allowed_groups
// are both empty, or list the user, or share a group with the user's groups and OIDC groups.
// The check runs before every request of a protected host, so the rules are read once into
// memory (host name -> rule), dropped when a host changes (invalidateHostIdentityRules, called
// after every host write and every reconcile) and re-read at most every RULES_TTL_MS anyway, so a
// write path that forgot to drop them is late by seconds, not forever.

/** A host that names who may enter it (a host with both lists empty has no rule: any signed-in user). */
export interface HostEntryRule {
  readonly hostId: number
  readonly domain: string
  readonly users: ReadonlySet<number>
  readonly groups: ReadonlySet<string>
}

export const RULES_TTL_MS = 30_000

type _Rules = ReadonlyMap<string, HostEntryRule>
let _rules: _Rules | undefined
let _loadedAtMs = 0
let _generation = 0
let _loading: Promise<_Rules> | undefined
// The last X-Forwarded-Host values and their rule (a protected host's checks repeat the same header).
const _byHeader = new Map<string | undefined, HostEntryRule | null>()
const _BY_HEADER_MAX = 1024

/** Drops the rules: the next check reads them again. Called after a host (or its names) changed. */
export function invalidateHostIdentityRules(): void {
  _rules = undefined
  _loading = undefined
  _generation++
  _byHeader.clear()
}

/** The rules when held and fresh, without a promise (the fast path); undefined when they must be read. */
export function cachedHostIdentityRules(now = Date.now()): _Rules | undefined {
  return _rules && now - _loadedAtMs < RULES_TTL_MS ? _rules : undefined
}

/** The rules, read from the database when not held (one read for concurrent callers). */
export function loadHostIdentityRules(): Promise<_Rules> {
  const held = cachedHostIdentityRules()
  if (held) return Promise.resolve(held)
  if (_loading) return _loading
  const generation = _generation
  const loading = _readRules().then((rules) => {
    // A host written while reading: these rules may predate it, so they are used once and not kept.
    if (generation === _generation) {
      _rules = rules
      _loadedAtMs = Date.now()
      _byHeader.clear()
    }
    if (_loading === loading) _loading = undefined
    return rules
  })
  loading.catch(() => {
    if (_loading === loading) _loading = undefined
  })
  _loading = loading
  return loading
}

async function _readRules(): Promise<_Rules> {
  const rows = await getDb()
    .select({
      id: hosts.id,
      domain: hosts.domain,
      users: hosts.authAllowedUsers,
      groups: hosts.authAllowedGroups,
      name: hostNames.name,
    })
    .from(hosts)
    .innerJoin(hostNames, eq(hostNames.hostId, hosts.id))
    .where(eq(hosts.authRequired, true))
  const rules = new Map<string, HostEntryRule>()
  const ofHost = new Map<number, HostEntryRule>()
  for (const r of rows) {
    if (!r.users?.length && !r.groups?.length) continue
    let rule = ofHost.get(r.id)
    if (!rule) ofHost.set(r.id, (rule = { hostId: r.id, domain: r.domain, users: new Set(r.users), groups: new Set(r.groups) }))
    rules.set(r.name.toLowerCase(), rule)
  }
  return rules
}

/**
 * The rule of the host a check is for, by its X-Forwarded-Host (the name the browser asked for;
 * a wildcard name `*.example.com` covers one label, as the proxy's host matcher does). null: the
 * host names nobody, so any signed-in user enters.
 */
export function hostEntryRuleFor(rules: _Rules, forwardedHost: string | undefined): HostEntryRule | null {
  if (_rules === rules) {
    const known = _byHeader.get(forwardedHost)
    if (known !== undefined) return known
  }
  let rule: HostEntryRule | null = null
  if (rules.size) {
    const name = hostnameOfHostValue(forwardedHost)
    const dot = name.indexOf('.')
    rule = rules.get(name) ?? (dot > 0 ? rules.get(`*${name.slice(dot)}`) : undefined) ?? null
  }
  if (_rules === rules) {
    if (_byHeader.size >= _BY_HEADER_MAX) _byHeader.clear()
    _byHeader.set(forwardedHost, rule)
  }
  return rule
}

/** Whether a host's rule admits a user: no rule, the user listed, or one group in common (exact, case-sensitive). */
export function admitsUser(rule: HostEntryRule | null, userId: number, groups: readonly string[] | undefined): boolean {
  if (!rule) return true
  if (rule.users.has(userId)) return true
  if (groups) for (const g of groups) if (rule.groups.has(g)) return true
  return false
}
