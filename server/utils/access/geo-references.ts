import { eq, inArray, isNotNull } from 'drizzle-orm'
import { accessLists, hosts, rules } from '../../../db/schema'
import type { Executor } from '../core/db'
import { badRequest } from '../core/errors'
import type { GeoPolicy } from './schemas'

// A geo policy's rule may name an access list (its IP rules become the rule's address ranges in the
// proxy, docs/access-control.md): the list must exist when the policy is saved, and a list a policy
// names cannot be deleted, so the proxy never reads a rule whose ranges silently vanished.

/** 400 naming the field when a rule of `policy` names an access list that does not exist. */
export async function assertGeoPolicyAccessLists(exec: Executor, policy: GeoPolicy | null | undefined): Promise<void> {
  if (!policy) return
  const named = policy.rules.flatMap((r, i) => (r.access_list_id === null ? [] : [{ i, id: r.access_list_id }]))
  if (!named.length) return
  const found = new Set(
    (
      await exec
        .select({ id: accessLists.id })
        .from(accessLists)
        .where(
          inArray(
            accessLists.id,
            named.map((n) => n.id),
          ),
        )
    ).map((r) => r.id),
  )
  const missing = named.find((n) => !found.has(n.id))
  if (missing)
    throw badRequest(
      `geo_policy.rules[${missing.i}].access_list_id: access list ${missing.id} does not exist; choose one from GET /api/access-lists or name addresses in cidrs`,
    )
}

const _uses = (policy: GeoPolicy | null, listId: number) => !!policy?.rules.some((r) => r.access_list_id === listId)

/**
 * The first host whose geo policy, or one of whose path rules' policies, names the list, as the
 * 409 message's subject; null when none does.
 */
export async function geoPolicyUsingAccessList(exec: Executor, listId: number): Promise<string | null> {
  const hostRows = await exec
    .select({ id: hosts.id, domain: hosts.domain, policy: hosts.geoPolicy })
    .from(hosts)
    .where(isNotNull(hosts.geoPolicy))
    .orderBy(hosts.id)
  const host = hostRows.find((h) => _uses(h.policy, listId))
  if (host) return `the geo policy of host ${host.id} (${host.domain})`
  const ruleRows = await exec
    .select({ id: rules.id, hostId: rules.hostId, policy: rules.geoPolicy, domain: hosts.domain })
    .from(rules)
    .innerJoin(hosts, eq(hosts.id, rules.hostId))
    .where(isNotNull(rules.geoPolicy))
    .orderBy(rules.id)
  const rule = ruleRows.find((r) => _uses(r.policy, listId))
  if (rule) return `the geo policy of path rule ${rule.id} of host ${rule.hostId} (${rule.domain})`
  return null
}
