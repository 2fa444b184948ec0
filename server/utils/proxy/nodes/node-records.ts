import { join } from 'node:path'
import { asc } from 'drizzle-orm'
import { proxyNodes } from '../../../../db/schema'
import { getConfig } from '../../core/config'
import type { Executor } from '../../core/db'
import { getSecretsBox } from '../../core/secrets'
import type { AdminTarget } from './client'

// The proxy nodes as the rollout reads them (docs/scaling.md). Node 1 is the one of
// PROXY_ADMIN_URL: it has no stored URL, is always enabled and is the canary.

export type NodeRow = typeof proxyNodes.$inferSelect
export const CANARY_NODE_ID = 1

export interface ProxyNode {
  id: number
  name: string
  target: AdminTarget
  /**
   * What makes the shared configuration this node's own, as replacements in its JSON text:
   * [shared text, this node's text]. Node 1 has none.
   */
  rewrites: ReadonlyArray<readonly [string, string]>
}

/**
 * The folder a node writes its access, error and WAF audit logs to: node 1 the proxy log folder
 * itself (as a single-node panel always did), another node `<log folder>/nodes/<id>` (ids are
 * never reused), so the ingester knows each line's node from its file (docs/scaling.md).
 */
export function nodeLogDir(id: number): string {
  const base = getConfig().proxy.logDir
  return id === CANARY_NODE_ID ? base : join(base, 'nodes', String(id))
}

/** A string as it appears inside a JSON string literal. */
const _jsonText = (s: string) => JSON.stringify(s).slice(1, -1)

function _nodeRewrites(row: NodeRow): Array<readonly [string, string]> {
  if (row.id === CANARY_NODE_ID) return []
  // Every path the builder puts under the log folder (access.log, error.log, waf-audit.log).
  const out: Array<readonly [string, string]> = [[_jsonText(`${nodeLogDir(CANARY_NODE_ID)}/`), _jsonText(`${nodeLogDir(row.id)}/`)]]
  const rewrite = _bouncerKeyRewrite(row)
  if (rewrite) out.push(rewrite)
  return out
}

/**
 * A node with its own bouncer key gets it as `apps.crowdsec.api_key` in place of the shared
 * LAPI_BOUNCER_KEY (docs/scaling.md). The pair names the whole `"api_key":"…"` member, so no
 * other text is touched; without the shared key the configuration has no bouncer to rewrite.
 */
function _bouncerKeyRewrite(row: NodeRow): readonly [string, string] | null {
  const shared = getConfig().lapi.bouncerKey
  const own = openNodeBouncerKey(row)
  if (!shared || !own) return null
  return [`"api_key":${JSON.stringify(shared)}`, `"api_key":${JSON.stringify(own)}`]
}

/**
 * The shared configuration text a node's text stands for, for comparing hashes; a text that is
 * not this node's own (it holds the shared side of a rewrite: the configuration of before the
 * node got a bouncer key of its own, or the canary's log paths) is returned marked, so that it
 * never hashes like the current configuration and the node gets its own pushed. Mapping back
 * alone cannot tell: the node's old text and its own map to the same shared text.
 */
export function sharedTextOf(node: Pick<ProxyNode, 'rewrites'>, text: string): string {
  const shared = fromNodeText(node, text)
  return toNodeText(node, shared) === text ? shared : `not the node's own configuration\n${text}`
}

/** The node's own configuration text from the shared one. */
export function toNodeText(node: Pick<ProxyNode, 'rewrites'>, text: string): string {
  for (const [shared, own] of node.rewrites) text = text.replaceAll(shared, own)
  return text
}

/** The shared configuration text from the node's own (for comparing hashes). */
export function fromNodeText(node: Pick<ProxyNode, 'rewrites'>, text: string): string {
  for (const [shared, own] of node.rewrites) text = text.replaceAll(own, shared)
  return text
}

/** The secrets box binds the sealed key to its row, so a value moved to another row does not open. */
export const nodeKeyOwner = (id: number) => `proxy_nodes/${id}/tls_client_key`

export function sealNodeKey(id: number, pem: string): string {
  return getSecretsBox().seal(pem, nodeKeyOwner(id))
}

export function openNodeKey(row: NodeRow): string | null {
  return row.tlsClientKey ? getSecretsBox().open(row.tlsClientKey, nodeKeyOwner(row.id)) : null
}

export const nodeBouncerKeyOwner = (id: number) => `proxy_nodes/${id}/bouncer_key`

export function sealNodeBouncerKey(id: number, key: string): string {
  return getSecretsBox().seal(key, nodeBouncerKeyOwner(id))
}

export function openNodeBouncerKey(row: NodeRow): string | null {
  return row.bouncerKey ? getSecretsBox().open(row.bouncerKey, nodeBouncerKeyOwner(row.id)) : null
}

export function nodeAdminUrl(row: NodeRow): string {
  return row.id === CANARY_NODE_ID ? getConfig().proxy.adminUrl : row.adminUrl!
}

export function nodeTarget(row: NodeRow): AdminTarget {
  const url = nodeAdminUrl(row)
  const key = openNodeKey(row)
  if (!url.startsWith('https:') || !row.tlsClientCert || !key) return { url }
  return { url, tls: { cert: row.tlsClientCert, key, ca: row.tlsServerCa } }
}

export async function readNodeRows(exec: Executor): Promise<NodeRow[]> {
  return exec.select().from(proxyNodes).orderBy(asc(proxyNodes.id))
}

/**
 * The nodes a push goes to, the canary (node 1) first, then the others by id.
 * Node 1 is there even if its row is missing (a database restored from before
 * migration 0023 is migrated first, so that is a safeguard only).
 */
export async function readRolloutNodes(exec: Executor): Promise<ProxyNode[]> {
  const rows = await readNodeRows(exec)
  const canary = rows.find((r) => r.id === CANARY_NODE_ID)
  const out: ProxyNode[] = [
    { id: CANARY_NODE_ID, name: canary?.name ?? 'node-1', target: { url: getConfig().proxy.adminUrl }, rewrites: [] },
  ]
  for (const r of rows)
    if (r.id !== CANARY_NODE_ID && r.enabled) out.push({ id: r.id, name: r.name, target: nodeTarget(r), rewrites: _nodeRewrites(r) })
  return out
}

/** The stored client keys, for redaction (core/redact.ts). */
export async function nodeKeySecrets(exec: Executor): Promise<string[]> {
  const out: string[] = []
  for (const r of await readNodeRows(exec)) {
    try {
      const key = openNodeKey(r)
      if (key) out.push(key, ...key.split('\n').filter((line) => line.length >= 16 && !line.startsWith('-----')))
    } catch {
      /* sealed under another master key: nothing the panel could leak either */
    }
  }
  return out
}

/** The nodes' own bouncer keys, for redaction (core/redact.ts). */
export async function nodeBouncerKeySecrets(exec: Executor): Promise<string[]> {
  const out: string[] = []
  for (const r of await readNodeRows(exec)) {
    try {
      const key = openNodeBouncerKey(r)
      if (key) out.push(key)
    } catch {
      /* sealed under another master key: nothing the panel could leak either */
    }
  }
  return out
}
