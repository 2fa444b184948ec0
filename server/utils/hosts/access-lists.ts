import { hash as bcryptHash } from '@node-rs/bcrypt'
import { eq } from 'drizzle-orm'
import { accessLists, hostAccessLists, hosts, type AccessListIpRule, type AccessListUser } from '../../../db/schema'
import { getDb, writeTransaction, type Executor, type Tx } from '../core/db'
import { badRequest, conflict, isUniqueViolation, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { UNCHANGED } from '../core/settings'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { hostIdsByAccessList } from './records'
import { streamUsingAccessList } from '../streams/records'
import { BCRYPT_HASH, type AccessListInput } from './access-list-schemas'
import { geoPolicyUsingAccessList } from '../access/geo-references'

// Access lists: basic-auth users and IP rules shared by any number of hosts
// (docs/access-lists.md). A change reconciles like a host change, in the same
// transaction. Passwords are hashed before the transaction opens (bcrypt is
// slow on purpose) and only the hash is stored; nothing here returns or audits one.

/** bcrypt's work factor: about 50 ms a hash on a small machine; Caddy's hash_cache spares repeats. */
export const BCRYPT_COST = 10

type ListRow = typeof accessLists.$inferSelect

/** What the stored row becomes, whoever wrote it (the API or an import). */
export interface AccessListValues {
  name: string
  realm: string
  default_action: 'allow' | 'deny'
  ip_rules: AccessListIpRule[]
  users: AccessListUser[]
}

export function presentAccessList(row: ListRow, hostIds: number[]) {
  return {
    id: row.id,
    name: row.name,
    realm: row.realm,
    default_action: row.defaultAction,
    ip_rules: row.ipRules.map((r) => ({ action: r.action, source: r.source })),
    // Usernames only: the hash never leaves the database except into the proxy configuration.
    users: row.users.map((u) => ({ username: u.username })),
    host_ids: hostIds,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

async function _present(exec: Executor, row: ListRow) {
  return presentAccessList(row, (await hostIdsByAccessList(exec, [row.id])).get(row.id) ?? [])
}

export async function listAccessLists() {
  const rows = await getDb().select().from(accessLists).orderBy(accessLists.id)
  const hostIds = await hostIdsByAccessList(getDb())
  return rows.map((r) => presentAccessList(r, hostIds.get(r.id) ?? []))
}

export async function getAccessList(id: number) {
  const row = await getDb().select().from(accessLists).where(eq(accessLists.id, id)).get()
  if (!row) throw notFound('access list', id)
  return _present(getDb(), row)
}

/**
 * The users to store: a new password is hashed, a user given without one (or
 * with "__UNCHANGED__") keeps the hash stored under that name.
 */
async function _resolveUsers(input: AccessListInput['users'], stored: AccessListUser[]): Promise<AccessListUser[]> {
  const storedByName = new Map(stored.map((u) => [u.username, u.hash]))
  return Promise.all(
    input.map(async (u) => {
      if (u.password === undefined || u.password === UNCHANGED) {
        const kept = storedByName.get(u.username)
        if (!kept) throw badRequest(`users: "${u.username}" is a new user and needs a password`)
        return { username: u.username, hash: kept }
      }
      return { username: u.username, hash: await bcryptHash(u.password, BCRYPT_COST) }
    }),
  )
}

function _columns(v: AccessListValues) {
  for (const u of v.users) if (!BCRYPT_HASH.test(u.hash)) throw new Error(`access list ${v.name}: user ${u.username} has no bcrypt hash`)
  return { name: v.name, realm: v.realm, defaultAction: v.default_action, ipRules: v.ip_rules, users: v.users }
}

function _auditFields(row: ListRow) {
  return {
    access_list_id: row.id,
    name: row.name,
    users: row.users.length,
    ip_rules: row.ipRules.length,
    default_action: row.defaultAction,
  }
}

function _duplicateName(err: unknown, name: string): never {
  if (isUniqueViolation(err)) throw conflict(`name: an access list named "${name}" already exists`)
  throw err
}

/** Inside the caller's transaction (the API below, and the importers): insert and audit, no reconcile. */
export async function insertAccessList(tx: Tx, values: AccessListValues, ctx: AuditContext): Promise<ListRow> {
  const now = new Date().toISOString()
  const row = (await tx
    .insert(accessLists)
    .values({ ..._columns(values), createdAt: now, updatedAt: now })
    .returning()
    .get()
    .catch((err) => _duplicateName(err, values.name)))!
  await writeAudit(ctx, 'access_list_create', _auditFields(row), tx)
  return row
}

/** Inside the caller's transaction: the host's list becomes `listId` (null: none), audited, no reconcile. */
export async function setHostAccessListInTransaction(tx: Tx, hostId: number, listId: number | null, ctx: AuditContext): Promise<void> {
  await tx.delete(hostAccessLists).where(eq(hostAccessLists.hostId, hostId))
  if (listId !== null) await tx.insert(hostAccessLists).values({ hostId, accessListId: listId })
  await writeAudit(ctx, 'host_access_list_set', { host_id: hostId, access_list_id: listId }, tx)
}

export async function createAccessList(input: AccessListInput, ctx: AuditContext) {
  const users = await _resolveUsers(input.users, [])
  return writeTransaction(async (tx) => {
    const row = await insertAccessList(tx, { ...input, users }, ctx)
    const outcome = await reconcileInTransaction(tx, ctx, `access list ${row.name} created`)
    return { ...(await _present(tx, row)), reconcile: presentReconcile(outcome) }
  })
}

export async function updateAccessList(id: number, input: AccessListInput, ctx: AuditContext) {
  const current = await getDb().select().from(accessLists).where(eq(accessLists.id, id)).get()
  if (!current) throw notFound('access list', id)
  const users = await _resolveUsers(input.users, current.users)
  return writeTransaction(async (tx) => {
    // A concurrent change of the same list between the hashing and here: refuse rather than drop it.
    const now = await tx.select({ updatedAt: accessLists.updatedAt }).from(accessLists).where(eq(accessLists.id, id)).get()
    if (!now) throw notFound('access list', id)
    if (now.updatedAt !== current.updatedAt) throw conflict(`access list ${id} changed while this request was processed; send it again`)
    const row = (await tx
      .update(accessLists)
      .set({ ..._columns({ ...input, users }), updatedAt: new Date().toISOString() })
      .where(eq(accessLists.id, id))
      .returning()
      .get()
      .catch((err) => _duplicateName(err, input.name)))!
    await writeAudit(ctx, 'access_list_update', _auditFields(row), tx)
    const outcome = await reconcileInTransaction(tx, ctx, `access list ${row.name} updated`)
    return { ...(await _present(tx, row)), reconcile: presentReconcile(outcome) }
  })
}

export async function deleteAccessList(id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const current = await tx.select().from(accessLists).where(eq(accessLists.id, id)).get()
    if (!current) throw notFound('access list', id)
    const used = (await hostIdsByAccessList(tx, [id])).get(id)
    if (used?.length)
      throw conflict(
        `access list ${id} is used by host ${used[0]}${used.length > 1 ? ` and ${used.length - 1} more` : ''}; detach it first (PUT /api/hosts/{id}/access-list)`,
      )
    const geo = await geoPolicyUsingAccessList(tx, id)
    if (geo) throw conflict(`access list ${id} is used by ${geo}; take it out of that policy's rules first`)
    const stream = await streamUsingAccessList(tx, id)
    if (stream)
      throw conflict(
        `access list ${id} is used by stream ${stream.id} ("${stream.name}"); set that stream's access_list_id to null or another list first`,
      )
    await tx.delete(hostAccessLists).where(eq(hostAccessLists.accessListId, id))
    await tx.delete(accessLists).where(eq(accessLists.id, id))
    await writeAudit(ctx, 'access_list_delete', { access_list_id: id, name: current.name }, tx)
    await reconcileInTransaction(tx, ctx, `access list ${current.name} deleted`)
  })
}

/** PUT /api/hosts/{id}/access-list: attach a list to a host, or detach (null); reconciles. */
export async function setHostAccessList(hostId: number, listId: number | null, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const host = await tx.select({ id: hosts.id, domain: hosts.domain }).from(hosts).where(eq(hosts.id, hostId)).get()
    if (!host) throw notFound('host', hostId)
    const list =
      listId === null
        ? null
        : await tx.select({ id: accessLists.id, name: accessLists.name }).from(accessLists).where(eq(accessLists.id, listId)).get()
    if (listId !== null && !list) throw badRequest(`access_list_id: access list ${listId} does not exist`)
    await setHostAccessListInTransaction(tx, hostId, listId, ctx)
    // The revision's reason names the list, not its id (the Revisions screen shows it as is).
    const reason = list ? `host ${host.domain} now behind access list "${list.name}"` : `host ${host.domain}: access list removed`
    const outcome = await reconcileInTransaction(tx, ctx, reason)
    return { host_id: hostId, access_list_id: listId, reconcile: presentReconcile(outcome) }
  })
}

/** A deleted host leaves no attachment behind (SQLite enforces ON DELETE CASCADE only with foreign_keys on). */
export async function detachDeletedHost(tx: Tx, hostId: number): Promise<void> {
  await tx.delete(hostAccessLists).where(eq(hostAccessLists.hostId, hostId))
}

/** The stored hashes, raw and in the base64 form the proxy is given, for redaction of proxy text. */
export async function accessListHashSecrets(exec: Executor): Promise<string[]> {
  const rows = await exec.select({ users: accessLists.users }).from(accessLists)
  return rows.flatMap((r) => r.users.flatMap((u) => [u.hash, Buffer.from(u.hash, 'utf8').toString('base64')]))
}
