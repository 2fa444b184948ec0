import { X509Certificate, createPrivateKey } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { proxyNodes } from '../../../../db/schema'
import { getDb, writeTransaction, type Tx } from '../../core/db'
import { badRequest, conflict, isUniqueViolation, notFound } from '../../core/errors'
import { writeAudit, type AuditContext } from '../../core/audit'
import { UNCHANGED } from '../../core/settings'
import { requestBackgroundReconcile } from '../sync/loop'
import { getConfig } from '../../core/config'
import { readNodeBouncers, type NodeBouncer } from '../../security/engine-agents'
import {
  CANARY_NODE_ID,
  nodeAdminUrl,
  openNodeBouncerKey,
  readNodeRows,
  sealNodeBouncerKey,
  sealNodeKey,
  openNodeKey,
  type NodeRow,
} from './node-records'
import type { NodeInput } from './node-schemas'
import { nodeStatus, nodeStorageStatus } from '../sync/state'

// The proxy node registry (docs/scaling.md): create, read, update, delete, each
// audited. A change is picked up by the reconcile loop, which gives a node that
// holds another configuration the current one; the answer waits for that look.
// The client key is sealed like DNS credentials and never leaves the database
// except into the TLS handshake with the node.

function _certInfo(pem: string) {
  const cert = new X509Certificate(pem)
  return {
    fingerprint_sha256: cert.fingerprint256,
    subject: cert.subject.replaceAll('\n', ', '),
    not_after: new Date(cert.validTo).toISOString(),
  }
}

/** `bouncers`: each node's bouncer on the engine (security/engine-agents.ts); absent: not looked up. */
export function presentNode(row: NodeRow, bouncers?: Map<number, NodeBouncer>) {
  return {
    id: row.id,
    name: row.name,
    admin_url: nodeAdminUrl(row),
    source: row.id === CANARY_NODE_ID ? ('environment' as const) : ('registry' as const),
    canary: row.id === CANARY_NODE_ID,
    labels: row.labels,
    enabled: row.id === CANARY_NODE_ID || row.enabled,
    tls: row.tlsClientCert
      ? { client_cert: _certInfo(row.tlsClientCert), client_key_set: !!row.tlsClientKey, server_ca_set: !!row.tlsServerCa }
      : null,
    bouncer_key_set: !!row.bouncerKey,
    bouncer: bouncers?.get(row.id) ?? null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    status: nodeStatus(row.id),
    storage: nodeStorageStatus(row.id),
  }
}

export async function listNodes() {
  const rows = await readNodeRows(getDb())
  const bouncers = await readNodeBouncers(rows)
  return rows.map((row) => presentNode(row, bouncers))
}

async function _row(exec: Tx | ReturnType<typeof getDb>, id: number): Promise<NodeRow> {
  const row = await exec.select().from(proxyNodes).where(eq(proxyNodes.id, id)).get()
  if (!row) throw notFound('proxy node', id)
  return row
}

export async function getNode(id: number) {
  const row = await _row(getDb(), id)
  // Every node: which bouncer is whose depends on which nodes share the key.
  return presentNode(row, await readNodeBouncers(await readNodeRows(getDb())))
}

/**
 * The sealed bouncer key column (docs/scaling.md): left out or "__UNCHANGED__" keeps what is
 * stored, null removes it (the node goes back to the shared key). The key itself is never
 * quoted in an error.
 */
async function _bouncerKeyColumn(tx: Tx, input: NodeInput, stored: NodeRow | undefined, id: number): Promise<string | null> {
  const given = input.bouncer_key
  if (given === undefined || given === UNCHANGED) {
    if (given === UNCHANGED && !stored?.bouncerKey)
      throw badRequest(`bouncer_key: nothing is stored for this node, so "${UNCHANGED}" cannot keep it; send the key`)
    return stored?.bouncerKey ?? null
  }
  if (given === null) return null
  if (id === CANARY_NODE_ID)
    throw badRequest("bouncer_key: node 1's bouncer uses LAPI_BOUNCER_KEY, the shared key; give other nodes a key of their own")
  const { bouncerKey, panelBouncerKey } = getConfig().lapi
  if (given === bouncerKey || given === panelBouncerKey)
    throw badRequest(
      "bouncer_key: this is one of the panel's own keys (LAPI_BOUNCER_KEY or LAPI_PANEL_BOUNCER_KEY); create a key for this node with `cscli bouncers add <name>`",
    )
  for (const other of await readNodeRows(tx)) {
    if (other.id === id) continue
    let theirs: string | null = null
    try {
      theirs = openNodeBouncerKey(other)
    } catch {
      /* unreadable: cannot be the same key in use */
    }
    if (theirs === given)
      throw conflict(`bouncer_key: node ${other.name} already uses this key; each node needs its own (\`cscli bouncers add <name>\`)`)
  }
  return sealNodeBouncerKey(id, given)
}

/** The TLS columns for an https node: the certificate and key checked to belong together, never echoed. */
function _tlsColumns(input: NodeInput, stored: NodeRow | undefined, id: number) {
  const url = new URL(input.admin_url!)
  if (url.pathname !== '/' || url.search || url.hash || url.username || url.password)
    throw badRequest('admin_url: give the scheme, host and port only (such as http://10.0.0.5:2019), no path, query or credentials')
  if (url.protocol === 'http:') {
    if (input.tls) throw badRequest('tls: a client certificate is only used with an https admin URL (Caddy remote admin)')
    return { tlsClientCert: null, tlsClientKey: null, tlsServerCa: null }
  }
  if (!input.tls)
    throw badRequest(
      "tls: an https admin URL is Caddy's remote admin endpoint, which needs the panel's client certificate and key (tls.client_cert_pem, tls.client_key_pem)",
    )
  const kept = (field: string, value: string | null | undefined) => {
    if (!value) throw badRequest(`tls.${field}: nothing is stored for this node, so "${UNCHANGED}" cannot keep it; send it`)
    return value
  }
  const certPem = input.tls.client_cert_pem === UNCHANGED ? kept('client_cert_pem', stored?.tlsClientCert) : input.tls.client_cert_pem
  const caPem = input.tls.server_ca_pem === UNCHANGED ? kept('server_ca_pem', stored?.tlsServerCa) : (input.tls.server_ca_pem ?? null)
  let cert: X509Certificate
  try {
    cert = new X509Certificate(certPem)
  } catch {
    throw badRequest('tls.client_cert_pem: not a readable PEM certificate')
  }
  let keyPem: string
  if (input.tls.client_key_pem === UNCHANGED) keyPem = kept('client_key_pem', stored ? openNodeKey(stored) : null)
  else keyPem = input.tls.client_key_pem
  let matches = false
  try {
    matches = cert.checkPrivateKey(createPrivateKey(keyPem))
  } catch {
    throw badRequest('tls.client_key_pem: not a readable, unencrypted PEM private key')
  }
  if (!matches) throw badRequest('tls.client_key_pem: this key does not belong to tls.client_cert_pem')
  if (caPem) {
    try {
      new X509Certificate(caPem)
    } catch {
      throw badRequest('tls.server_ca_pem: not a readable PEM certificate')
    }
  }
  return { tlsClientCert: certPem, tlsClientKey: sealNodeKey(id, keyPem), tlsServerCa: caPem }
}

async function _assertUrlFree(tx: Tx, url: string, selfId: number | null): Promise<void> {
  const normalised = new URL(url).origin
  for (const r of await readNodeRows(tx))
    if (r.id !== selfId && new URL(nodeAdminUrl(r)).origin === normalised)
      throw conflict(`admin_url: node ${r.name} already has this admin URL`)
}

function _auditFields(row: NodeRow) {
  // The client certificate is named by its fingerprint; its key never appears.
  return {
    node_id: row.id,
    name: row.name,
    admin_url: nodeAdminUrl(row),
    labels: row.labels,
    enabled: row.enabled,
    tls_client_cert: row.tlsClientCert ? new X509Certificate(row.tlsClientCert).fingerprint256 : null,
    // Whether the node has a bouncer key of its own; never the key.
    bouncer_key_set: !!row.bouncerKey,
  }
}

function _duplicateName(err: unknown, name: string): never {
  if (isUniqueViolation(err)) throw conflict(`name: a node named "${name}" already exists`)
  throw err
}

/** After a change, one look of the loop: a new or re-enabled node gets the current configuration. */
async function _afterChange<T>(id: number | null, done: T): Promise<T> {
  await requestBackgroundReconcile().catch(() => {})
  if (id === null) return done
  const bouncer = (await readNodeBouncers(await readNodeRows(getDb()))).get(id) ?? null
  return { ...done, status: nodeStatus(id), bouncer } as T
}

export async function createNode(input: NodeInput, ctx: AuditContext) {
  if (!input.admin_url) throw badRequest('admin_url: required (http://<private address>:2019, or https://<address>:2021 for remote admin)')
  const created = await writeTransaction(async (tx) => {
    await _assertUrlFree(tx, input.admin_url!, null)
    const now = new Date().toISOString()
    const inserted = (await tx
      .insert(proxyNodes)
      .values({
        name: input.name,
        adminUrl: input.admin_url!,
        labels: input.labels,
        enabled: input.enabled,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
      .get()
      .catch((err) => _duplicateName(err, input.name)))!
    // The key is sealed to the row's id, known only now.
    const row = (await tx
      .update(proxyNodes)
      .set({ ..._tlsColumns(input, undefined, inserted.id), bouncerKey: await _bouncerKeyColumn(tx, input, undefined, inserted.id) })
      .where(eq(proxyNodes.id, inserted.id))
      .returning()
      .get())!
    await writeAudit(ctx, 'proxy_node_create', _auditFields(row), tx)
    return presentNode(row)
  })
  return _afterChange(created.id, created)
}

export async function updateNode(id: number, input: NodeInput, ctx: AuditContext) {
  const updated = await writeTransaction(async (tx) => {
    const current = await _row(tx, id)
    let columns: Partial<typeof proxyNodes.$inferInsert>
    if (id === CANARY_NODE_ID) {
      // Node 1 is PROXY_ADMIN_URL: its address and TLS come from the environment, and it is always on.
      if (input.admin_url !== undefined || input.tls)
        throw badRequest(
          'admin_url: node 1 is the node of PROXY_ADMIN_URL; change that variable to move it (name and labels can be set here)',
        )
      if (!input.enabled) throw badRequest('enabled: node 1 is the canary every push goes to first and cannot be disabled')
      columns = { name: input.name, labels: input.labels, bouncerKey: await _bouncerKeyColumn(tx, input, current, id) }
    } else {
      if (!input.admin_url) throw badRequest('admin_url: required')
      await _assertUrlFree(tx, input.admin_url, id)
      columns = {
        name: input.name,
        adminUrl: input.admin_url,
        labels: input.labels,
        enabled: input.enabled,
        ..._tlsColumns(input, current, id),
        bouncerKey: await _bouncerKeyColumn(tx, input, current, id),
      }
    }
    const row = (await tx
      .update(proxyNodes)
      .set({ ...columns, updatedAt: new Date().toISOString() })
      .where(eq(proxyNodes.id, id))
      .returning()
      .get()
      .catch((err) => _duplicateName(err, input.name)))!
    // A new key is named as a change (a rotation), never shown.
    const bouncerKeyChanged = openNodeBouncerKey(current) !== openNodeBouncerKey(row)
    await writeAudit(ctx, 'proxy_node_update', { ..._auditFields(row), bouncer_key_changed: bouncerKeyChanged }, tx)
    return presentNode(row)
  })
  return _afterChange(id, updated)
}

/** The node's Caddy keeps the configuration it holds; the panel stops pushing to it. */
export async function deleteNode(id: number, ctx: AuditContext): Promise<void> {
  if (id === CANARY_NODE_ID) throw conflict('node 1 is the node of PROXY_ADMIN_URL and the canary of every push; it cannot be deleted')
  await writeTransaction(async (tx) => {
    const row = await _row(tx, id)
    await tx.delete(proxyNodes).where(eq(proxyNodes.id, id))
    await writeAudit(ctx, 'proxy_node_delete', _auditFields(row), tx)
  })
  await _afterChange(null, undefined)
}

/** The `proxy_nodes` section of /api/system/health. */
export async function readNodesHealth() {
  // The status only: health is polled, and the bouncers' last pulls would read the engine's database each time.
  const nodes = (await readNodeRows(getDb()))
    .map((row) => presentNode(row))
    .map((n) => ({ id: n.id, name: n.name, enabled: n.enabled, ...n.status }))
  const active = nodes.filter((n) => n.enabled)
  return { nodes, enabled: active.length, in_sync: active.filter((n) => n.in_sync === true).length }
}
