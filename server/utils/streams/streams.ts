import { eq, ne } from 'drizzle-orm'
import { accessLists, streams, targetGroups } from '../../../db/schema'
import { getConfig } from '../core/config'
import { getDb, writeTransaction, type Tx } from '../core/db'
import { badRequest, conflict, isUniqueViolation, notFound } from '../core/errors'
import { writeAudit, type AuditContext } from '../core/audit'
import { parseWith } from '../core/validate'
import { presentReconcile, reconcileInTransaction } from '../proxy/sync/reconcile'
import { STREAM_DEFAULTS, streamBody, type Stream, type StreamInput } from './schemas'
import { streamFromRow, streamToRow, type StreamRow } from './records'
import {
  portsText,
  portsToPublish,
  proxyPortConflict,
  proxyPortsOf,
  streamConflict,
  webHostClash,
  webHostClashMessage,
  type ProxyPorts,
} from './conflicts'

// Streams (docs/streams.md): TCP and UDP forwarding through the proxy's layer-4 app.
// The body is checked on its own by streams/schemas.ts; this file adds what needs
// the other rows (conflicts.ts) and writes, audits and reconciles in one transaction,
// like an access list.

type StreamFields = Omit<Stream, 'id'>

const _proxyPorts = (): ProxyPorts => proxyPortsOf(getConfig().proxy)

export function presentStream(row: StreamRow, ports: ProxyPorts = _proxyPorts()) {
  const stream = streamFromRow(row)
  return { ...stream, ports_to_publish: portsToPublish(stream, ports), created_at: row.createdAt, updated_at: row.updatedAt }
}

export async function listStreams() {
  const ports = _proxyPorts()
  return (await getDb().select().from(streams).orderBy(streams.id)).map((r) => presentStream(r, ports))
}

export async function getStream(id: number) {
  const row = await getDb().select().from(streams).where(eq(streams.id, id)).get()
  if (!row) throw notFound('stream', id)
  return presentStream(row)
}

/** The body's fields over `base` (the defaults on create, the stored stream on update): a field left out keeps base's. */
function _resolve(input: StreamInput, base: StreamFields): StreamFields {
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(input)) if (value !== undefined) out[key] = value
  return out as StreamFields
}

/**
 * Cross-row checks, in the order an operator fixes them: what the body points at (400), then who
 * already holds its ports or names (409). Nothing is written before they pass.
 */
async function _assertFits(tx: Tx, fields: StreamFields, exceptId?: number): Promise<void> {
  // A PUT's stored fields and new ones together must still form a valid body (a range end kept
  // below a new start, tls_sni kept on a stream turned UDP): the same messages as a POST.
  parseWith(streamBody, fields)
  const sni = fields.tls_sni
  const twice = sni.find((n, i) => sni.indexOf(n) !== i)
  if (twice) throw badRequest(`tls_sni: "${twice}" is listed twice`)
  const group = await tx.select({ id: targetGroups.id }).from(targetGroups).where(eq(targetGroups.id, fields.target_group_id)).get()
  if (!group) throw badRequest(`target_group_id: target group ${fields.target_group_id} does not exist; GET /api/target-groups lists them`)
  if (fields.access_list_id !== null) {
    const list = await tx.select({ id: accessLists.id }).from(accessLists).where(eq(accessLists.id, fields.access_list_id)).get()
    if (!list) throw badRequest(`access_list_id: access list ${fields.access_list_id} does not exist; GET /api/access-lists lists them`)
  }
  const ownPort = proxyPortConflict(fields, _proxyPorts())
  if (ownPort) throw conflict(ownPort)
  // Disabled streams hold their ports and names too: enabling one must never collide.
  const others = (
    await (exceptId === undefined ? tx.select().from(streams) : tx.select().from(streams).where(ne(streams.id, exceptId))).orderBy(
      streams.id,
    )
  ).map(streamFromRow)
  for (const other of others) {
    const held = streamConflict(fields, other)
    if (held) throw conflict(held)
  }
  const clash = await webHostClash(tx, sni)
  if (clash) throw conflict(webHostClashMessage(clash))
}

function _duplicateName(err: unknown, name: string): never {
  if (isUniqueViolation(err)) throw conflict(`name: a stream named "${name}" already exists`)
  throw err
}

/** What an audit row says about a stream: its shape, never anything secret (a stream holds none). */
function _auditFields(row: StreamRow) {
  return {
    stream_id: row.id,
    name: row.name,
    enabled: row.enabled,
    protocol: row.protocol,
    ports: portsText({ protocol: row.protocol, listen_port: row.listenPort, listen_port_end: row.listenPortEnd }),
    target_group_id: row.targetGroupId,
    tls_sni: row.tlsSni,
  }
}

/** Inside the caller's transaction (the API below, an importer): checked, inserted and audited; the caller reconciles. */
export async function insertStream(tx: Tx, input: StreamInput, ctx: AuditContext): Promise<StreamRow> {
  const fields = _resolve(input, { ...STREAM_DEFAULTS, tls_sni: [] } as unknown as StreamFields)
  await _assertFits(tx, fields)
  const now = new Date().toISOString()
  const row = (await tx
    .insert(streams)
    .values({ ...streamToRow(fields), createdAt: now, updatedAt: now })
    .returning()
    .get()
    .catch((err) => _duplicateName(err, fields.name)))!
  await writeAudit(ctx, 'stream_create', _auditFields(row), tx)
  return row
}

export async function createStream(input: StreamInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const row = await insertStream(tx, input, ctx)
    const outcome = await reconcileInTransaction(tx, ctx, `stream ${row.name} created`)
    return { ...presentStream(row), reconcile: presentReconcile(outcome) }
  })
}

/** A field left out of the body keeps its stored value (docs/streams.md); `null` clears a nullable one. */
export async function updateStream(id: number, input: StreamInput, ctx: AuditContext) {
  return writeTransaction(async (tx) => {
    const current = await tx.select().from(streams).where(eq(streams.id, id)).get()
    if (!current) throw notFound('stream', id)
    const { id: _id, ...stored } = streamFromRow(current)
    const fields = _resolve(input, stored)
    await _assertFits(tx, fields, id)
    const row = (await tx
      .update(streams)
      .set({ ...streamToRow(fields), updatedAt: new Date().toISOString() })
      .where(eq(streams.id, id))
      .returning()
      .get()
      .catch((err) => _duplicateName(err, fields.name)))!
    await writeAudit(ctx, 'stream_update', _auditFields(row), tx)
    const outcome = await reconcileInTransaction(tx, ctx, `stream ${row.name} updated`)
    return { ...presentStream(row), reconcile: presentReconcile(outcome) }
  })
}

export async function deleteStream(id: number, ctx: AuditContext): Promise<void> {
  await writeTransaction(async (tx) => {
    const current = await tx.select().from(streams).where(eq(streams.id, id)).get()
    if (!current) throw notFound('stream', id)
    await tx.delete(streams).where(eq(streams.id, id))
    await writeAudit(ctx, 'stream_delete', _auditFields(current), tx)
    await reconcileInTransaction(tx, ctx, `stream ${current.name} deleted`)
  })
}
