import { createHash } from 'node:crypto'
import { eq, getTableColumns, getTableName, notInArray, sql, type SQL } from 'drizzle-orm'
import type { SQLiteTable } from 'drizzle-orm/sqlite-core'
import {
  accessLists,
  hostAccessLists,
  hostNames,
  hosts,
  manualCerts,
  rules,
  settings,
  streams,
  targetGroups,
  wafExclusions,
  type AccessListUser,
} from '../../../../db/schema'
import type { Executor, Tx } from '../../core/db'
import { conflict, sqliteErrorCode } from '../../core/errors'
import { SETTINGS_CATALOGUE, getSetting } from '../../core/settings'
import { assertDnsProviderUsable } from '../../hosts/dns-providers'
import { HOST_KIND_DEFAULTS } from '../../hosts/kind-schemas'
import { camelCaseKeys } from '../../core/row-keys'

// The desired state a proxy configuration is built from, as a list of named
// parts (docs/revisions.md). Revisions store it, diffs compare it per object and
// field, a revert writes it back. A new concern adds one part to _parts below:
// collect, restore, and optionally check what it needs.
//
// Parts hold no secret: hosts, groups, rules and WAF exclusions have none, access
// lists keep a fingerprint of each password hash (never the hash), and the settings
// part takes only the non-secret settings the proxy configuration depends on.

/** One part: object key -> object (stored fields, as the database holds them). */
export type PartState = Record<string, Record<string, unknown>>
export type DesiredState = Record<string, PartState>

export interface DesiredStatePart {
  name: string
  collect(exec: Executor): Promise<PartState>
  /**
   * A human label for an object in summaries, with names rather than ids ("app.example.com", "rule /api/* on
   * app.example.com"); `state` is the whole state the object belongs to, to name what it points at.
   */
  label(key: string, object: Record<string, unknown>, state: DesiredState): string
  /** Refuses (409) when the state refers to something that no longer exists (a certificate, a credential). */
  check?(tx: Tx, state: DesiredState, revisionId: number): Promise<void>
  /** Deletes the objects of this part that are absent from `objects`. */
  prune?(tx: Tx, objects: PartState): Promise<void>
  /** Writes `objects` back (inserted, or updated in place); with prune, the database then holds exactly them. */
  restore(tx: Tx, objects: PartState): Promise<void>
  /**
   * Other parts point at this one's objects with a foreign key that forbids deleting them (a host's
   * target group, an attachment's access list): its objects are pruned last, once nothing points at them.
   */
  referenced?: boolean
}

/** Fields that change on every save and say nothing about the configuration. */
const _NOISE_FIELDS = new Set(['createdAt', 'updatedAt'])

const _snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/** Deletes the rows of `table` whose id is not among `objects`' keys. */
async function _pruneRows(tx: Tx, table: SQLiteTable & { id: any }, objects: PartState): Promise<void> {
  const ids = Object.keys(objects).map(Number)
  await tx.delete(table).where(notInArray(table.id, ids.length ? ids : [-1]))
}

/**
 * Gives every row of `table` a placeholder in its unique field `key` before the rows are written back:
 * two objects that swapped names since the revision, or a name reused by an object the revert
 * removes, would otherwise collide half-way. Every row is written back or pruned afterwards.
 */
async function _freeUniqueNames(tx: Tx, table: SQLiteTable & { id: any }, key: 'name' | 'domain'): Promise<void> {
  await (tx as any).update(table).set({ [key]: sql`'~revert~' || ${table.id}` })
}

/**
 * A part for a table with an integer id, restored row by row (rows absent from the state are deleted).
 * The rows are stored as drizzle returns them (camelCase keys, JSON columns parsed), so they go back
 * through drizzle unchanged; `any` because drizzle's builders are typed per concrete table.
 */
/**
 * A revision recorded before a migration added a column does not hold it; writing back only the
 * stored keys would keep the column's current value (a host would keep custom handlers it did not
 * have then). Such a column gets its database default, which each migration chooses to be what the
 * panel did before it (NULL where the column has none).
 */
async function _columnsMissingFrom(
  tx: Tx,
  table: SQLiteTable,
  rows: Array<Record<string, unknown>>,
): Promise<(row: Record<string, unknown>) => Record<string, SQL>> {
  const columns = Object.entries(getTableColumns(table))
  if (!rows.some((r) => columns.some(([key]) => !(key in r)))) return () => ({})
  const info = (await tx.all(sql.raw(`PRAGMA table_info(${JSON.stringify(getTableName(table))})`))) as Array<{
    name: string
    dflt_value: string | null
  }>
  const defaultOf = new Map(info.map((c) => [c.name, c.dflt_value ?? 'NULL']))
  return (row) =>
    Object.fromEntries(columns.filter(([key]) => !(key in row)).map(([key, col]) => [key, sql.raw(defaultOf.get(col.name) ?? 'NULL')]))
}

function _tablePart(
  name: string,
  table: SQLiteTable & { id: any },
  label: DesiredStatePart['label'],
  extra: {
    check?: DesiredStatePart['check']
    afterRestore?: (tx: Tx, objects: PartState) => Promise<void>
    referenced?: boolean
    /** The field with a UNIQUE constraint (a name), freed before the rows are written back. */
    unique?: 'name' | 'domain'
  } = {},
): DesiredStatePart {
  return {
    name,
    label,
    check: extra.check,
    referenced: extra.referenced,
    async collect(exec) {
      const rows = (await (exec as any).select().from(table).orderBy(table.id)) as Array<Record<string, unknown>>
      return Object.fromEntries(rows.map((r) => [String(r.id), r]))
    },
    prune: (tx, objects) => _pruneRows(tx, table, objects),
    async restore(tx, objects) {
      if (extra.unique) await _freeUniqueNames(tx, table, extra.unique)
      const missing = await _columnsMissingFrom(tx, table, Object.values(objects))
      for (const stored of Object.values(objects)) {
        const row = { ...missing(stored), ...stored }
        const { id: _id, ...rest } = row
        await (tx as any).insert(table).values(row).onConflictDoUpdate({ target: table.id, set: rest })
      }
      await extra.afterRestore?.(tx, objects)
    },
  }
}

const _hostsPart = _tablePart('hosts', hosts, (_k, h) => String(h.domain), {
  // A host on a manual certificate needs that certificate; a DNS-01 host needs its provider's credentials.
  async check(tx, state, revisionId) {
    for (const h of Object.values(state.hosts ?? {})) {
      const names = [h.domain as string, ...(h.aliases as string[])]
      if (
        h.tlsMode === 'manual' &&
        !(await tx
          .select({ id: manualCerts.hostId })
          .from(manualCerts)
          .where(eq(manualCerts.hostId, h.id as number))
          .get())
      )
        throw conflict(
          `revision ${revisionId} cannot be restored: host ${h.domain} used an uploaded certificate that has since been deleted; upload one again or revert to another revision`,
        )
      if (h.tlsMode === 'auto' && h.tlsChallenge === 'dns') {
        try {
          await assertDnsProviderUsable(tx, h.tlsDnsProvider as string | null, names)
        } catch (err) {
          throw conflict(
            `revision ${revisionId} cannot be restored: host ${h.domain} needs DNS provider ${h.tlsDnsProvider}, whose credentials are gone (${(err as Error).message})`,
          )
        }
      }
    }
  },
  unique: 'domain',
  // The name index follows the hosts (WAF exclusions are a part of their own).
  async afterRestore(tx, objects) {
    await tx.delete(hostNames)
    const names = Object.values(objects).flatMap((h) =>
      [h.domain as string, ...(h.aliases as string[])].map((name) => ({ name, hostId: h.id as number })),
    )
    if (names.length) await tx.insert(hostNames).values(names)
  },
})

const _groupsPart = _tablePart('target_groups', targetGroups, (_k, g) => String(g.name), {
  referenced: true,
  unique: 'name',
})
// A revision stored before host kinds (0038) holds hosts without their kind columns: they
// were proxy hosts. Read with the defaults, such a revision restores them as proxy hosts
// and shows no change for a host that is still one.
const _HOST_KIND_COLUMNS = camelCaseKeys(HOST_KIND_DEFAULTS)
function _withHostKinds(state: DesiredState): DesiredState {
  if (!state.hosts) return state
  return { ...state, hosts: Object.fromEntries(Object.entries(state.hosts).map(([k, h]) => [k, { ..._HOST_KIND_COLUMNS, ...h }])) }
}

/** A host by its domain; by its number only when the state does not hold it. */
const _hostName = (state: DesiredState, hostId: unknown) => String(state.hosts?.[String(hostId)]?.domain ?? `host ${String(hostId)}`)

const _rulesPart = _tablePart('rules', rules, (k, r, state) => `rule ${String(r.path ?? k)} on ${_hostName(state, r.hostId)}`)
const _wafExclusionsPart = _tablePart(
  'waf_exclusions',
  wafExclusions,
  (_k, e, state) => `WAF rule ${String(e.ruleId)} off on ${_hostName(state, e.hostId)}${e.path ? ` under ${String(e.path)}` : ''}`,
)

/** The non-secret settings the proxy configuration depends on (those whose change reconciles). */
const _PROXY_SETTINGS = SETTINGS_CATALOGUE.filter((d) => d.affectsProxy && !d.secret)

const _settingsPart: DesiredStatePart = {
  name: 'settings',
  label: (key) => key,
  async collect(exec) {
    const out: PartState = {}
    for (const d of _PROXY_SETTINGS) out[d.key] = { value: await getSetting(d.key, exec) }
    return out
  },
  async restore(tx, objects) {
    const now = new Date().toISOString()
    for (const d of _PROXY_SETTINGS) {
      const stored = objects[d.key]
      if (!stored) continue // a setting newer than the revision keeps its value
      const value = JSON.stringify(stored.value)
      await tx
        .insert(settings)
        .values({ key: d.key, value, updatedAt: now })
        .onConflictDoUpdate({ target: settings.key, set: { value, updatedAt: now } })
    }
  },
}

/** Shows that a password changed without holding its hash (bcrypt hashes are redacted like secrets). */
const _passwordFingerprint = (hash: string) => createHash('sha256').update(hash).digest('hex').slice(0, 16)

type _StoredListUser = { username: string; password_fingerprint: string }

/** The hash behind each (list, user, fingerprint) the database holds now: a revert can only reuse these. */
async function _currentPasswordHashes(exec: Executor): Promise<Map<string, string>> {
  const byKey = new Map<string, string>()
  for (const row of await exec.select({ id: accessLists.id, users: accessLists.users }).from(accessLists))
    for (const u of row.users) byKey.set(`${row.id}/${u.username}/${_passwordFingerprint(u.hash)}`, u.hash)
  return byKey
}

const _accessListsPart: DesiredStatePart = {
  name: 'access_lists',
  label: (_k, l) => String(l.name),
  async collect(exec) {
    const rows = await exec.select().from(accessLists).orderBy(accessLists.id)
    return Object.fromEntries(
      rows.map((r) => [
        String(r.id),
        {
          ...r,
          users: r.users.map((u): _StoredListUser => ({ username: u.username, password_fingerprint: _passwordFingerprint(u.hash) })),
        },
      ]),
    )
  },
  // The panel never keeps an old password hash: a user whose password changed or who was removed since cannot come back.
  async check(tx, state, revisionId) {
    const current = await _currentPasswordHashes(tx)
    for (const list of Object.values(state.access_lists ?? {}))
      for (const u of list.users as _StoredListUser[])
        if (!current.has(`${list.id}/${u.username}/${u.password_fingerprint}`))
          throw conflict(
            `revision ${revisionId} cannot be restored: user ${u.username} of access list ${String(list.name)} had a password that has since been changed or removed, and the panel keeps no old password; set it again or revert to another revision`,
          )
  },
  referenced: true,
  prune: (tx, objects) => _pruneRows(tx, accessLists, objects),
  async restore(tx, objects) {
    const current = await _currentPasswordHashes(tx)
    await _freeUniqueNames(tx, accessLists, 'name')
    for (const list of Object.values(objects)) {
      const users: AccessListUser[] = (list.users as _StoredListUser[]).map((u) => ({
        username: u.username,
        hash: current.get(`${list.id}/${u.username}/${u.password_fingerprint}`)!,
      }))
      const row = { ...list, users } as typeof accessLists.$inferInsert
      const { id: _id, ...rest } = row
      await tx.insert(accessLists).values(row).onConflictDoUpdate({ target: accessLists.id, set: rest })
    }
  },
}

/** Which list each host uses (a host has at most one). */
const _hostAccessListsPart: DesiredStatePart = {
  name: 'host_access_lists',
  label: (k, a, state) =>
    `host ${_hostName(state, k)} behind access list "${String(state.access_lists?.[String(a.accessListId)]?.name ?? a.accessListId)}"`,
  async collect(exec) {
    const rows = await exec.select().from(hostAccessLists).orderBy(hostAccessLists.hostId)
    return Object.fromEntries(rows.map((r) => [String(r.hostId), { ...r }]))
  },
  // Attachments are dropped first and written back whole: one may point at a list the revert removes.
  async prune(tx) {
    await tx.delete(hostAccessLists)
  },
  async restore(tx, objects) {
    const rows = Object.values(objects).map((a) => ({ hostId: a.hostId as number, accessListId: a.accessListId as number }))
    if (rows.length) await tx.insert(hostAccessLists).values(rows)
  },
}

/**
 * Streams point at a target group and maybe an access list (docs/streams.md). A revision recorded
 * before streams existed holds no `streams` part: the current streams stay, so the groups and lists
 * it restores must still hold what they point at (the database does not enforce the references).
 */
const _streamsPart = _tablePart('streams', streams, (_k, s) => String(s.name), {
  unique: 'name',
  async check(tx, state, revisionId) {
    const kept = state.streams ? Object.values(state.streams) : await tx.select().from(streams).orderBy(streams.id)
    for (const s of kept) {
      const group = state.target_groups && !state.target_groups[String(s.targetGroupId)]
      const list = s.accessListId != null && state.access_lists && !state.access_lists[String(s.accessListId)]
      if (group || list)
        throw conflict(
          `revision ${revisionId} cannot be restored: stream ${String(s.name)} uses ${group ? `target group ${String(s.targetGroupId)}` : `access list ${String(s.accessListId)}`}, which the revision does not hold; point the stream elsewhere or delete it first, or revert to a later revision`,
        )
    }
  },
})

/** Dependency order: groups and lists before the hosts, streams, rules, exclusions and attachments that point at them. */
const _parts: readonly DesiredStatePart[] = [
  _groupsPart,
  _accessListsPart,
  _hostsPart,
  _hostAccessListsPart,
  _streamsPart,
  _rulesPart,
  _wafExclusionsPart,
  _settingsPart,
]

export function desiredStateParts(): readonly DesiredStatePart[] {
  return _parts
}

export async function collectDesiredState(exec: Executor): Promise<DesiredState> {
  const out: DesiredState = {}
  for (const p of _parts) out[p.name] = await p.collect(exec)
  return out
}

export interface FieldChange {
  field: string
  before: unknown
  after: unknown
}
export interface ObjectChange {
  part: string
  key: string
  label: string
  change: 'added' | 'removed' | 'changed'
  fields: FieldChange[]
}

// Equal values, JSON objects compared as JSON (a revision diffs every field of every row: strict equality first).
const _same = (a: unknown, b: unknown) =>
  a === b || (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && JSON.stringify(a) === JSON.stringify(b))

/** Per object and field, from `before` to `after`; parts missing on one side count as empty. */
export function diffDesiredState(stateBefore: DesiredState, stateAfter: DesiredState): ObjectChange[] {
  const [before, after] = [_withHostKinds(stateBefore), _withHostKinds(stateAfter)]
  const changes: ObjectChange[] = []
  const partNames = [...new Set([..._parts.map((p) => p.name), ...Object.keys(before), ...Object.keys(after)])]
  for (const name of partNames) {
    const part = _parts.find((p) => p.name === name)
    const a = before[name] ?? {},
      b = after[name] ?? {}
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort((x, y) => Number(x) - Number(y) || x.localeCompare(y))
    for (const key of keys) {
      const x = a[key],
        y = b[key]
      const fieldNames = [...new Set([...Object.keys(x ?? {}), ...Object.keys(y ?? {})])].filter((f) => !_NOISE_FIELDS.has(f))
      const fields = fieldNames
        .filter((f) => !_same(x?.[f], y?.[f]))
        .map((f) => ({ field: name === 'settings' ? key : _snake(f), before: x?.[f] ?? null, after: y?.[f] ?? null }))
      const change = !x ? 'added' : !y ? 'removed' : fields.length ? 'changed' : null
      if (change) changes.push({ part: name, key, label: part ? part.label(key, (y ?? x)!, y ? after : before) : key, change, fields })
    }
  }
  return changes
}

/** The summary a revision keeps: which objects changed and which fields, without the values. */
export function summariseChanges(changes: ObjectChange[]) {
  return changes.map((c) => ({ part: c.part, key: c.key, label: c.label, change: c.change, fields: c.fields.map((f) => f.field) }))
}

/** The driver's own message ("FOREIGN KEY constraint failed"), never drizzle's, which quotes the query's parameters. */
function _driverMessage(err: unknown): string {
  let e: any = err
  for (let depth = 0; e && depth < 4; depth++, e = e.cause)
    if (typeof e.code === 'string' && e.code.startsWith('SQLITE_')) return String(e.message).replace(/^SQLITE_\w+: /, '')
  return 'a constraint failed'
}

/**
 * Checks every part's references, then writes every part back, in the caller's transaction and in
 * dependency order (issue 33): objects created after the revision go children first (exclusions,
 * rules, attachments, hosts), every part is written back parents first, and only then do groups and
 * lists created after the revision go, once nothing points at them. A constraint the state still
 * breaks is a 409 naming the part, never a 500.
 */
export async function restoreDesiredState(tx: Tx, storedState: DesiredState, revisionId: number): Promise<void> {
  const state = _withHostKinds(storedState)
  for (const p of _parts) await p.check?.(tx, state, revisionId)
  const present = _parts.filter((p) => state[p.name])
  const step = async (p: DesiredStatePart, action: 'prune' | 'restore') => {
    try {
      await p[action]?.(tx, state[p.name]!)
    } catch (err) {
      if (!sqliteErrorCode(err)?.startsWith('SQLITE_CONSTRAINT')) throw err
      const what = action === 'prune' ? `removing the ${p.name} created after it` : `writing back its ${p.name}`
      throw conflict(
        `revision ${revisionId} cannot be restored: ${what} breaks a database constraint (${_driverMessage(err)}); revert to another revision`,
      )
    }
  }
  for (const p of [...present].reverse()) if (!p.referenced) await step(p, 'prune')
  for (const p of present) await step(p, 'restore')
  for (const p of [...present].reverse()) if (p.referenced) await step(p, 'prune')
}
