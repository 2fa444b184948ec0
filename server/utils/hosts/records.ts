import { eq, inArray } from 'drizzle-orm'
import { accessLists, hostAccessLists, hosts, rules, targetGroups, wafExclusions } from '../../../db/schema'
import type { Executor } from '../core/db'
import { notFound } from '../core/errors'
import { camelCaseKeys, snakeCaseKeys, type SameKeys, type SnakeCased } from '../core/row-keys'
import type { Host, HostFields, Rule, TargetGroup, WafExclusion } from './schemas'

// One row <-> domain mapper per table, used by the presenters, the proxy snapshot
// and the test factories; and the reads the snapshot makes. Imports nothing from
// proxy/: the snapshot depends on hosts/, never the reverse.

type HostRow = typeof hosts.$inferSelect
type TargetGroupRow = typeof targetGroups.$inferSelect
type RuleRow = typeof rules.$inferSelect
type WafExclusionRow = typeof wafExclusions.$inferSelect
type _Timestamps = 'createdAt' | 'updatedAt'

// The compiler compares each table with its zod record: a field added to one and
// not the other fails the type check here (the values are checked by the returns below).
const _hostColumnsMatch: SameKeys<SnakeCased<Omit<HostRow, _Timestamps>>, Host> = true
const _groupColumnsMatch: SameKeys<SnakeCased<Omit<TargetGroupRow, _Timestamps>>, TargetGroup> = true
const _ruleColumnsMatch: SameKeys<SnakeCased<Omit<RuleRow, _Timestamps>>, Rule> = true
const _exclusionColumnsMatch: SameKeys<SnakeCased<Omit<WafExclusionRow, 'createdAt'>>, WafExclusion> = true
void [_hostColumnsMatch, _groupColumnsMatch, _ruleColumnsMatch, _exclusionColumnsMatch]

/** When a row was created and last changed, as the API shows them. */
export function timestampsOf(row: { createdAt: string; updatedAt: string }) {
  return { created_at: row.createdAt, updated_at: row.updatedAt }
}

export function hostFromRow(row: HostRow): Host {
  const { createdAt: _created, updatedAt: _updated, ...columns } = row
  return snakeCaseKeys(columns)
}

/** The columns a create or an update writes (timestamps are the caller's). */
export function hostToRow(fields: HostFields): Omit<HostRow, 'id' | _Timestamps> {
  return camelCaseKeys(fields)
}

export function targetGroupFromRow(row: TargetGroupRow): TargetGroup {
  const { createdAt: _created, updatedAt: _updated, ...columns } = row
  return snakeCaseKeys(columns)
}

export function targetGroupToRow(fields: Omit<TargetGroup, 'id'>): Omit<TargetGroupRow, 'id' | _Timestamps> {
  return camelCaseKeys(fields)
}

export function ruleFromRow(row: RuleRow): Rule {
  const { createdAt: _created, updatedAt: _updated, ...columns } = row
  return snakeCaseKeys(columns)
}

export function ruleToRow(fields: Omit<Rule, 'id' | 'host_id'>): Omit<RuleRow, 'id' | 'hostId' | _Timestamps> {
  return camelCaseKeys(fields)
}

export function wafExclusionFromRow(row: WafExclusionRow): WafExclusion {
  const { createdAt: _created, ...columns } = row
  return snakeCaseKeys(columns)
}

export async function readHosts(exec: Executor): Promise<Host[]> {
  return (await exec.select().from(hosts)).map(hostFromRow)
}

export async function readTargetGroups(exec: Executor): Promise<TargetGroup[]> {
  return (await exec.select().from(targetGroups)).map(targetGroupFromRow)
}

export async function readRules(exec: Executor): Promise<Rule[]> {
  return (await exec.select().from(rules)).map(ruleFromRow)
}

export async function readWafExclusions(exec: Executor): Promise<WafExclusion[]> {
  return (await exec.select().from(wafExclusions)).map(wafExclusionFromRow)
}

/** The host a rule, an exclusion or a certificate belongs to; 404 when there is none. */
export async function hostIdAndDomain(exec: Executor, hostId: number): Promise<{ id: number; domain: string }> {
  const host = await exec.select({ id: hosts.id, domain: hosts.domain }).from(hosts).where(eq(hosts.id, hostId)).get()
  if (!host) throw notFound('host', hostId)
  return host
}

/** An access list as the proxy needs it: IP rules (first match wins), then basic-auth users (bcrypt hashes only). */
export interface AccessListRecord {
  id: number
  name: string
  realm: string
  default_action: 'allow' | 'deny'
  ip_rules: { action: 'allow' | 'deny'; source: string }[]
  users: { username: string; hash: string }[]
  host_ids: number[]
}

/** The hosts each access list is attached to; an attachment of a deleted host is not one. */
export async function hostIdsByAccessList(exec: Executor, listIds?: number[]): Promise<Map<number, number[]>> {
  const q = exec
    .select({ hostId: hostAccessLists.hostId, listId: hostAccessLists.accessListId })
    .from(hostAccessLists)
    .innerJoin(hosts, eq(hosts.id, hostAccessLists.hostId))
  const rows = listIds ? await q.where(inArray(hostAccessLists.accessListId, listIds)) : await q
  const byList = new Map<number, number[]>()
  for (const r of rows.sort((a, b) => a.hostId - b.hostId)) byList.set(r.listId, [...(byList.get(r.listId) ?? []), r.hostId])
  return byList
}

export async function readAccessLists(exec: Executor): Promise<AccessListRecord[]> {
  const rows = await exec.select().from(accessLists).orderBy(accessLists.id)
  const hostIds = await hostIdsByAccessList(exec)
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    realm: r.realm,
    default_action: r.defaultAction,
    ip_rules: r.ipRules.map((x) => ({ action: x.action, source: x.source })),
    users: r.users.map((u) => ({ username: u.username, hash: u.hash })),
    host_ids: hostIds.get(r.id) ?? [],
  }))
}
