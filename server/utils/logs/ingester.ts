import { execFile } from 'node:child_process'
import { closeSync, openSync, readSync, statSync, type Stats } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { acquireLease, releaseLease } from '../core/lease'
import { startLoop, type Loop } from '../core/background'
import type { InStatement } from '@libsql/client'
import { getClient, getDb, runWrite } from '../core/db'
import { getConfig } from '../core/config'
import { getSetting } from '../core/settings'
import { logger } from '../core/log'
import { systemActor, writeAudit } from '../core/audit'
import { hostNames, proxyNodes } from '../../../db/schema'
import { CANARY_NODE_ID, nodeLogDir } from '../proxy/node-records'
import { openGeoReader } from '../geo/readers'
import { countryOfRecord } from '../geo/walker'
import { isLanAddress } from '../geo/ip'
import { checkIngestedBatch } from '../ops/alerts'
import { knownSecrets, makeRedactor } from '../core/redact'
import { publishLogRows, subscriberCount } from './hub'
import { presentLog, type LogRecord } from './present'
import { LOG_FILES, PARSERS, type LogRow, type LogSource, type ParseContext } from './parse'
import { HEAD_BYTES, headFor, planRead, readLines, type Position, type ReadPlan } from './tailer'
import { insertStatements } from './writer'
import { clearTextIndex, indexLogText, logMarks, rollUpLogs } from './rollup'
import { LOOPS } from '../core/job-names'

// Tails the proxy's access, error and WAF audit logs in PROXY_LOG_DIR (node 1)
// and in PROXY_LOG_DIR/nodes/<id> (every other proxy node, docs/scaling.md). Each
// group of lines is parsed outside the write queue, then inserted (statements
// of 100 rows) in one transaction together with the file's new position, so a
// restart neither loses nor duplicates rows. New rows go to the live tail
// after their commit. One panel ingests at a time (a lease row, below), so
// replicas sharing a database never read the same file twice.

export const COMMIT_ROWS = 5_000
const _LEASE = 'logs:ingester'
const _LEASE_TTL_MS = 20_000
const _HOST_REFRESH_MS = 2_000
const _ERROR_AUDIT_EVERY_MS = 60_000
const _ROLLUP_BACKLOG_ROWS = 100_000

// Domain -> host id, from host_names; re-read when a domain is unknown (at most every 2 s).
let _hosts: { atMs: number; byName: Map<string, number> } = { atMs: 0, byName: new Map() }
let _hostsGeneration = 0
/**
 * After a change of host names: the next line re-reads them, whatever the throttle says. Without
 * it, a WAF line (which names its host only by domain) of a host created less than 2 s after the
 * last re-read kept host_id null for good.
 */
export function forgetHostNames(): void {
  _hostsGeneration++
  _hosts = { ..._hosts, atMs: 0 }
}
async function _refreshHosts(force: boolean): Promise<void> {
  if (Date.now() - _hosts.atMs < (force ? _HOST_REFRESH_MS : 30_000)) return
  const generation = _hostsGeneration
  const rows = await getDb().select().from(hostNames)
  // A change committed while this read ran may be missing from it: keep the cache stale then.
  _hosts = { atMs: generation === _hostsGeneration ? Date.now() : 0, byName: new Map(rows.map((r) => [r.name.toLowerCase(), r.hostId])) }
}

// Country per address (LAN for private ones, as lookupIp answers): the reader is taken once per
// group of lines, and a memo in front of it is emptied every minute (a refresh may change answers).
let _geo: ReturnType<typeof openGeoReader> = null
let _countries = new Map<string, string | null>()
let _countriesAtMs = Date.now()
function _countryOf(ip: string): string | null {
  let c = _countries.get(ip)
  if (c === undefined) {
    try {
      c = isLanAddress(ip) ? 'LAN' : (countryOfRecord(_geo?.get(ip)) ?? null)
    } catch {
      c = null
    }
    _countries.set(ip, c)
  }
  return c
}
function _refreshGeo(): void {
  _geo = openGeoReader('country')
  if (Date.now() - _countriesAtMs > 60_000 || _countries.size > 50_000) {
    _countries = new Map()
    _countriesAtMs = Date.now()
  }
}

const _context: ParseContext = { hostIdOf: (domain) => _hosts.byName.get(domain) ?? null, countryOf: _countryOf }

async function _readPosition(path: string): Promise<Position | null> {
  const r = await getClient().execute({ sql: 'SELECT inode, offset_bytes, head FROM log_offsets WHERE path = ?', args: [path] })
  const row = r.rows[0]
  return row ? { inode: Number(row.inode), offset: Number(row.offset_bytes), head: String(row.head ?? '') } : null
}

function _savePosition(path: string, pos: Position): InStatement {
  return {
    sql: `INSERT INTO log_offsets (path, inode, offset_bytes, updated_at, head) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (path) DO UPDATE SET inode = excluded.inode, offset_bytes = excluded.offset_bytes, updated_at = excluded.updated_at, head = excluded.head`,
    args: [path, pos.inode, pos.offset, new Date().toISOString(), pos.head],
  }
}

/** Parses lines into rows; a domain the host cache does not know triggers one refresh. */
async function _parse(source: LogSource, texts: string[]): Promise<LogRow[]> {
  const parse = PARSERS[source]
  const nowMs = Date.now()
  _refreshGeo()
  const rows = texts.map((t) => parse(t, _context, nowMs))
  // The proxy's own messages (a DNS provider's error, a refused update) may quote a credential.
  if (source === 'caddy_error') {
    const redact = makeRedactor(await knownSecrets())
    for (const r of rows) {
      if (r.raw) r.raw = redact(r.raw)
      if (r.message) r.message = redact(r.message)
    }
  }
  const missing = rows.filter((r) => r.hostId == null && r.hostDomain)
  if (missing.length) {
    await _refreshHosts(true)
    for (const r of missing) r.hostId = _hosts.byName.get(r.hostDomain!) ?? null
  }
  return rows
}

/** Commits one group: its rows, and the position just past its last line. Returns the stored rows (with ids) when someone tails. */
async function _commit(path: string, pos: Position, rows: LogRow[]): Promise<LogRecord[]> {
  const live = subscriberCount() > 0
  const results = await runWrite(() => getClient().batch([...insertStatements(rows, live), _savePosition(path, pos)], 'write'))
  if (!live) return []
  const ids = results.slice(0, -1).flatMap((rs) => rs.rows.map((r) => Number(r.id)))
  return rows.map((r, i) => ({
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
    country: null,
    actor: null,
    nodeId: null,
    nodeName: null,
    ...r,
  }))
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
    const stored = await _commit(path, { inode: plan.inode, offset: end, head: headFor(plan.head, end) }, rows)
    if (stored.length) publishLogRows(stored.map(presentLog))
    if (rows.length)
      await checkIngestedBatch(source, rows).catch((err) => logger.warn(`events from ingested ${source} rows: ${(err as Error).message}`))
    total += rows.length
  }
  // A new or truncated file without a complete line yet: remember that it is the one being followed.
  if (!groups && plan.reason !== 'append' && plan.reason !== 'rotated-rest')
    await runWrite(() => getClient().batch([_savePosition(path, { inode: plan.inode, offset: 0, head: '' })], 'write'))
  return total
}

// --- bounding the WAF audit log ---------------------------------------------
// Coraza keeps its audit log open for appending and never rotates it, and only a
// configuration reload (which empties the bouncer's decisions) reopens it. So
// the ingested part is cut from the front of the file in place: the kernel's
// collapse-range (fallocate) removes whole blocks under the inode lock, so an
// append racing it lands after it, never in the removed range. Only blocks
// wholly before the ingested offset go; the position moves back by as much.

const _execFileAsync = promisify(execFile)
let _collapseUnsupported: string | undefined

/** The position after cutting, or null when nothing needs cutting (or it cannot be done here). */
export async function collapseIngestedPrefix(path: string, maxBytes: number): Promise<Position | null> {
  if (_collapseUnsupported) return null
  const pos = await _readPosition(path)
  let st: Stats
  try {
    st = statSync(path)
  } catch {
    return null
  }
  if (!pos || st.ino !== pos.inode || pos.offset < maxBytes) return null
  const block = st.blksize || 4096
  const cut = Math.floor(pos.offset / block) * block
  if (cut <= 0) return null
  // The fingerprint of the file as it will start: bytes the ingester already read, so they cannot change.
  const fd = openSync(path, 'r')
  let headAfter: Buffer
  try {
    headAfter = Buffer.alloc(Math.min(HEAD_BYTES, pos.offset - cut))
    readSync(fd, headAfter, 0, headAfter.length, cut)
  } finally {
    closeSync(fd)
  }
  try {
    await _execFileAsync('fallocate', ['--collapse-range', '--offset', '0', '--length', String(cut), path])
  } catch (err) {
    _collapseUnsupported = ((err as { stderr?: string }).stderr || (err as Error).message).trim()
    logger.warn(
      `WAF audit log: cannot cut the ingested part of ${path} on this filesystem (${_collapseUnsupported}); it grows until rotated by hand`,
    )
    return null
  }
  const next: Position = { inode: pos.inode, offset: pos.offset - cut, head: headFor(headAfter, pos.offset - cut) }
  // A crash right here re-reads at most one block (from the start of the cut file): duplicates, never a loss.
  await runWrite(() => getClient().batch([_savePosition(path, next)], 'write'))
  logger.info(`WAF audit log: cut ${cut} ingested bytes from ${path}`)
  return next
}

/** Reads whatever was appended to `path` (or is left in its rotated predecessor) and stores it. Returns the rows ingested. */
export async function ingestFile(path: string, source: LogSource, node?: LogNode): Promise<number> {
  await _refreshHosts(false)
  let total = 0
  // At most a few plans per call: the rest of a rotated file, then the new file.
  for (let i = 0; i < 3; i++) {
    const plan = planRead(path, await _readPosition(path))
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

let _loop: Loop | undefined
let _stopped = false
let _nextLeaseCheckMs = 0
let _lastRollupMs = 0
let _lastTextIndexMs = 0
let _textIndexSetting = { on: true, readAtMs: 0 }
let _rollupBehind = false
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

// The nodes' folders, re-read at most every 2 s. Disabled nodes are read too: what they wrote
// before is still theirs. A deleted node's folder is no longer read (its rows stay).
let _folders: { atMs: number; list: Array<LogNode & { dir: string }> } = { atMs: 0, list: [] }
async function _nodeFolders(): Promise<Array<LogNode & { dir: string }>> {
  if (Date.now() - _folders.atMs < _HOST_REFRESH_MS) return _folders.list
  const rows = await getDb().select({ id: proxyNodes.id, name: proxyNodes.name }).from(proxyNodes).orderBy(proxyNodes.id)
  // Node 1 is read even without its row (a database from before migration 0023 is migrated first; a safeguard).
  if (!rows.some((r) => r.id === CANARY_NODE_ID)) rows.unshift({ id: CANARY_NODE_ID, name: 'node-1' })
  _folders = { atMs: Date.now(), list: rows.map((r) => ({ ...r, dir: nodeLogDir(r.id) })) }
  return _folders.list
}

async function _tick(): Promise<void> {
  if (Date.now() >= _nextLeaseCheckMs) {
    // The leader renews at half the lease's life; another panel retries every 5 s.
    try {
      _status.leader = await acquireLease(_LEASE, _LEASE_TTL_MS, _holder())
      _nextLeaseCheckMs = Date.now() + (_status.leader ? _LEASE_TTL_MS / 2 : 5_000)
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
      if (_stopped) return
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
      await _keepRollups(marks, ingested)
    } catch (err) {
      await _reportError('roll-up', err)
    }
    try {
      await _keepTextIndex(marks, ingested)
    } catch (err) {
      await _reportError('text index', err)
    }
  }
  _status.last_tick_at = new Date().toISOString()
}

/**
 * Rolls up when ingestion is idle, every 10 s, or when the backlog would make queries slow
 * (queries add the rows not rolled up yet, so waiting costs them time, never correctness).
 * Audit rows arrive without the ingester: they are rolled up here too.
 */
async function _keepRollups(marks: { lastId: number; maxId: number }, ingested: number): Promise<void> {
  const backlog = marks.maxId - marks.lastId
  const sinceMs = Date.now() - _lastRollupMs
  if (backlog >= _ROLLUP_BACKLOG_ROWS || (backlog > 0 && (sinceMs > 10_000 || (ingested === 0 && (_rollupBehind || sinceMs > 1_000))))) {
    const covered = await rollUpLogs({ budgetMs: ingested === 0 ? 1_000 : 250 }) // chunks of 20,000 rows, requests go in between
    _rollupBehind = covered < backlog
    _lastRollupMs = Date.now()
  }
}

/** logs.text_index, read at most once a second (the loop ticks five times a second). */
async function _textIndexEnabled(): Promise<boolean> {
  if (Date.now() - _textIndexSetting.readAtMs >= 1_000)
    _textIndexSetting = { on: await getSetting<boolean>('logs.text_index'), readAtMs: Date.now() }
  return _textIndexSetting.on
}

/**
 * The free-text index follows the roll-ups: it is filled once they have caught
 * up (dashboards and stats first), in the same cadence (idle, or every 10 s
 * during a burst), and emptied when the setting is turned off. `marks` only
 * decide whether to start: indexLogText reads the marks again in each chunk.
 */
async function _keepTextIndex(marks: { textLastId: number; maxId: number }, ingested: number): Promise<void> {
  if (!(await _textIndexEnabled())) {
    if (marks.textLastId > 0) await clearTextIndex()
    return
  }
  const sinceMs = Date.now() - _lastTextIndexMs
  if (_rollupBehind || marks.maxId <= marks.textLastId || (ingested > 0 && sinceMs <= 10_000)) return
  await indexLogText({ budgetMs: ingested === 0 ? 1_000 : 250 })
  _lastTextIndexMs = Date.now()
}

/** Starts polling every `intervalMs`; never throws, never stops on an error. */
export function startIngester(intervalMs = 200): void {
  _stopped = false
  _folders = { atMs: 0, list: [] }
  _loop = startLoop(LOOPS.logsIngest, { run: () => _tick(), nextDelayMs: () => intervalMs, onFailure: (err) => _reportError('tick', err) })
}

/** Stops the loop after the group being written (no half-written group: each is one transaction). */
export async function stopIngester(): Promise<void> {
  _stopped = true // the tick in progress stops between files
  await _loop?.stop()
  if (_status.leader) await releaseLease(_LEASE, _holder()).catch(() => {})
}
