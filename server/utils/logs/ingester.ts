import { hostname } from 'node:os'
import { join } from 'node:path'
import { acquireLease, releaseLease } from '../core/lease'
import { startLoop, type Loop } from '../core/background'
import { getClient, getDb, runWrite } from '../core/db'
import { getConfig } from '../core/config'
import { getSetting } from '../core/settings'
import { logger } from '../core/log'
import { systemActor, writeAudit } from '../core/audit'
import { proxyNodes } from '../../../db/schema'
import { CANARY_NODE_ID, nodeLogDir } from '../proxy/nodes/node-records'
import { checkIngestedBatch } from '../ops/alerts'
import { noteProxyHealthRows } from '../ops/target-health'
import { knownSecrets, makeRedactor } from '../core/redact'
import { publishLogRows, subscriberCount } from './hub'
import { presentLog, recordOf, type LogRecord } from './present'
import { foldGroup, type Fold } from './fold'
import { LOG_FILES, PARSERS, type LogRow, type LogSource } from './parse'
import { headFor, planRead, readLines, type Position, type ReadPlan } from './tailer'
import { insertStatements } from './writer'
import { logMarks } from './rollup'
import { LOOPS } from '../core/job-names'
import { hostIdOf, parseContext, refreshGeo, refreshHosts, refreshStreams, streamNameOf } from './ingest-lookups'
import { readPosition, savePosition } from './ingest-positions'
import { collapseIngestedPrefix } from './waf-audit-bound'
import { keepRollups, keepTextIndex } from './ingest-derived'

export { forgetHostNames } from './ingest-lookups'
export { collapseIngestedPrefix } from './waf-audit-bound'

// Tails the proxy's access, error and WAF audit logs in PROXY_LOG_DIR (node 1)
// and in PROXY_LOG_DIR/nodes/<id> (every other proxy node, docs/scaling.md). Each
// group of lines is parsed outside the write queue, then inserted (statements
// of 100 rows) in one transaction together with the file's new position, so a
// restart neither loses nor duplicates rows. New rows go to the live tail
// after their commit. One panel ingests at a time (a lease row, below), so
// replicas sharing a database never read the same file twice.
//
// By stage: lookups while parsing (ingest-lookups.ts), the request fold (fold.ts), positions (ingest-positions.ts), this
// file's read-parse-commit of each file and the loop, the WAF audit log's bound
// (waf-audit-bound.ts), then the roll-ups and the text index (ingest-derived.ts).

export const COMMIT_ROWS = 5_000
const _LEASE = 'logs:ingester'
const _LEASE_TTL_MS = 20_000
const _ERROR_AUDIT_EVERY_MS = 60_000
const _FOLDER_REFRESH_MS = 2_000

/** Parses lines into rows; a domain the host cache does not know triggers one refresh. */
async function _parse(source: LogSource, texts: string[]): Promise<LogRow[]> {
  const parse = PARSERS[source]
  const nowMs = Date.now()
  refreshGeo()
  const rows = texts.map((t) => parse(t, parseContext, nowMs))
  // The proxy's own messages (a DNS provider's error, a refused update) may quote a credential.
  if (source === 'caddy_error') {
    const redact = makeRedactor(await knownSecrets())
    for (const r of rows) {
      if (r.raw) r.raw = redact(r.raw)
      if (r.message) r.message = redact(r.message)
    }
  }
  if (source === 'layer4') {
    // The parser named the streams it knew; the others are looked up once more (ingest-lookups.ts).
    const unnamed = rows.filter((r) => r.streamId != null && r.streamName == null)
    await refreshStreams(unnamed.map((r) => r.streamId!))
    for (const r of unnamed) r.streamName = streamNameOf(r.streamId!)
  }
  const missing = rows.filter((r) => r.hostId == null && r.hostDomain)
  if (missing.length) {
    await refreshHosts(true)
    for (const r of missing) r.hostId = hostIdOf(r.hostDomain!)
  }
  return rows
}

/** Commits one group: its rows, and the position just past its last line. Returns the stored rows (with ids) when someone tails. */
async function _commit(path: string, pos: Position, rows: LogRow[], fold: Fold): Promise<LogRecord[]> {
  const live = subscriberCount() > 0
  const inserts = insertStatements(rows, live)
  // The fold's updates follow the INSERTs in the same transaction (fold.ts counts on that).
  const results = await runWrite(() => getClient().batch([...inserts, ...fold.statements, savePosition(path, pos)], 'write'))
  if (!live) return []
  const ids = results.slice(0, inserts.length).flatMap((rs) => rs.rows.map((r) => Number(r.id)))
  // Rows stored earlier that the fold changed go to the tail again: the viewer replaces or folds them.
  const changed = fold.changedIds.length
    ? (
        await getClient().execute({
          sql: `SELECT * FROM logs WHERE id IN (${fold.changedIds.map(() => '?').join(',')})`,
          args: fold.changedIds,
        })
      ).rows.map(recordOf)
    : []
  return [
    ...changed,
    ...rows.map((r, i) => ({
      id: ids[i]!,
      hostId: null,
      hostDomain: null,
      ruleId: null,
      status: null,
      method: null,
      path: null,
      remoteIp: null,
      userAgent: null,
      level: null,
      message: null,
      raw: null,
      durationMs: null,
      wafRuleId: null,
      wafSeverity: null,
      wafAnomalyScore: null,
      wafRules: null,
      country: null,
      actor: null,
      nodeId: null,
      nodeName: null,
      requestLogId: null,
      requestId: null,
      streamId: null,
      streamName: null,
      upstream: null,
      bytesIn: null,
      bytesOut: null,
      asn: null,
      ...r,
    })),
  ]
}

/** The proxy node whose folder a file is in: every row read from it carries the node. */
export interface LogNode {
  id: number
  name: string
}

async function _ingestPlan(path: string, source: LogSource, plan: ReadPlan, node: LogNode | undefined): Promise<number> {
  let total = 0
  let groups = 0
  if (plan.reason !== 'append')
    logger.info(
      `log ingestion: ${path}: ${plan.reason === 'rotated-rest' ? `reading the rest of the rotated ${plan.file}` : plan.reason === 'truncated' ? 'truncated or replaced, reading from the start' : 'new file'}`,
    )
  for (const group of readLines(plan, COMMIT_ROWS)) {
    groups++
    const texts = group.map((l) => l.text).filter((t): t is string => t !== null && t.trim() !== '')
    const rows = texts.length ? await _parse(source, texts) : []
    if (node)
      for (const r of rows) {
        r.nodeId = node.id
        r.nodeName = node.name
      }
    const end = group.at(-1)!.end
    // Health-check lines update the targets' health; a failing target's repeated lines are folded (the events below still see them all).
    const kept = source === 'caddy_error' ? await noteProxyHealthRows(rows) : rows
    const fold = await foldGroup(source, kept)
    const stored = await _commit(path, { inode: plan.inode, offset: end, head: headFor(plan.head, end) }, kept, fold)
    if (stored.length) publishLogRows(stored.map(presentLog))
    if (rows.length)
      await checkIngestedBatch(source, rows).catch((err) => logger.warn(`events from ingested ${source} rows: ${(err as Error).message}`))
    total += rows.length
  }
  // A new or truncated file without a complete line yet: remember that it is the one being followed.
  if (!groups && plan.reason !== 'append' && plan.reason !== 'rotated-rest')
    await runWrite(() => getClient().batch([savePosition(path, { inode: plan.inode, offset: 0, head: '' })], 'write'))
  return total
}

/** Reads whatever was appended to `path` (or is left in its rotated predecessor) and stores it. Returns the rows ingested. */
export async function ingestFile(path: string, source: LogSource, node?: LogNode): Promise<number> {
  await refreshHosts(false)
  let total = 0
  // At most a few plans per call: the rest of a rotated file, then the new file.
  for (let i = 0; i < 3; i++) {
    const plan = planRead(path, await readPosition(path))
    if (!plan) break
    total += await _ingestPlan(path, source, plan, node)
    if (plan.reason !== 'rotated-rest') break
  }
  return total
}

// --- one ingester per database ---------------------------------------------
// A lease row (table leases) held by this machine and data folder rather than
// by this process: a panel restarted after a crash takes it back at once,
// while a second panel sharing the database (another host or folder) waits.

const _holder = () => `ingester@${hostname()}:${getConfig().dataDir}`

// --- the loop -------------------------------------------------------------

/** The loop's own state; `folders` are the nodes' folders, re-read at most every 2 s. */
const _run = {
  loop: undefined as Loop | undefined,
  stopped: false,
  nextLeaseCheckMs: 0,
  folders: { atMs: 0, list: [] as Array<LogNode & { dir: string }> },
}
const _lastErrorAuditMs = new Map<string, number>()
const _status = {
  last_tick_at: null as string | null,
  last_error: null as string | null,
  last_error_at: null as string | null,
  rows_ingested: 0,
  leader: false,
}

/** The ingester's state, for health views. */
export function ingesterStatus() {
  return { ..._status }
}

async function _reportError(what: string, err: unknown): Promise<void> {
  const message = (err as Error)?.message ?? String(err)
  logger.error(`log ingestion: ${what}: ${message}`)
  _status.last_error = `${what}: ${message}`
  _status.last_error_at = new Date().toISOString()
  // The ingester's own errors land in the same table (and filters), at most once a minute per cause.
  if (Date.now() - (_lastErrorAuditMs.get(what) ?? 0) > _ERROR_AUDIT_EVERY_MS) {
    _lastErrorAuditMs.set(what, Date.now())
    await writeAudit(systemActor('log-ingester'), 'log_ingestion_error', { file: what, error: message.slice(0, 500) }).catch(() => {})
  }
}

// The nodes' folders. Disabled nodes are read too: what they wrote before is still theirs. A
// deleted node's folder is no longer read (its rows stay).
async function _nodeFolders(): Promise<Array<LogNode & { dir: string }>> {
  if (Date.now() - _run.folders.atMs < _FOLDER_REFRESH_MS) return _run.folders.list
  const rows = await getDb().select({ id: proxyNodes.id, name: proxyNodes.name }).from(proxyNodes).orderBy(proxyNodes.id)
  // Node 1 is read even without its row (a database from before migration 0023 is migrated first; a safeguard).
  if (!rows.some((r) => r.id === CANARY_NODE_ID)) rows.unshift({ id: CANARY_NODE_ID, name: 'node-1' })
  _run.folders = { atMs: Date.now(), list: rows.map((r) => ({ ...r, dir: nodeLogDir(r.id) })) }
  return _run.folders.list
}

async function _tick(): Promise<void> {
  if (Date.now() >= _run.nextLeaseCheckMs) {
    // The leader renews at half the lease's life; another panel retries every 5 s.
    try {
      _status.leader = await acquireLease(_LEASE, _LEASE_TTL_MS, _holder())
      _run.nextLeaseCheckMs = Date.now() + (_status.leader ? _LEASE_TTL_MS / 2 : 5_000)
    } catch (err) {
      await _reportError('lease', err)
      return
    }
  }
  if (!_status.leader) return
  let ingested = 0
  let folders: Array<LogNode & { dir: string }>
  try {
    folders = await _nodeFolders()
  } catch (err) {
    await _reportError('proxy nodes', err)
    return
  }
  for (const { dir, ...node } of folders) {
    // Node 1's errors name the file alone, as before there were nodes.
    const label = (file: string) => (node.id === CANARY_NODE_ID ? file : `${node.name}/${file}`)
    for (const { file, source } of LOG_FILES) {
      if (_run.stopped) return
      try {
        ingested += await ingestFile(join(dir, file), source, node)
      } catch (err) {
        await _reportError(label(file), err)
      }
    }
    try {
      const wafAudit = LOG_FILES.find((f) => f.source === 'waf_audit')!.file
      await collapseIngestedPrefix(join(dir, wafAudit), await getSetting<number>('logs.waf_audit_max_bytes'))
    } catch (err) {
      await _reportError(label('waf-audit bound'), err)
    }
  }
  _status.rows_ingested += ingested
  // One read of both marks serves the roll-ups and the free-text index.
  const marks = await logMarks().catch((err) => _reportError('roll-up', err).then(() => null))
  if (marks) {
    try {
      await keepRollups(marks, ingested)
    } catch (err) {
      await _reportError('roll-up', err)
    }
    try {
      await keepTextIndex(marks, ingested)
    } catch (err) {
      await _reportError('text index', err)
    }
  }
  _status.last_tick_at = new Date().toISOString()
}

/** Starts polling every `intervalMs`; never throws, never stops on an error. */
export function startIngester(intervalMs = 200): void {
  _run.stopped = false
  _run.folders = { atMs: 0, list: [] }
  _run.loop = startLoop(LOOPS.logsIngest, {
    run: () => _tick(),
    nextDelayMs: () => intervalMs,
    onFailure: (err) => _reportError('tick', err),
  })
}

/** Stops the loop after the group being written (no half-written group: each is one transaction). */
export async function stopIngester(): Promise<void> {
  _run.stopped = true // the tick in progress stops between files
  await _run.loop?.stop()
  if (_status.leader) await releaseLease(_LEASE, _holder()).catch(() => {})
}
