import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { hostNames, logOffsets, logs } from '../../../db/schema'
import { getDb, writeTransaction } from '../core/db'
import { getConfig } from '../core/config'
import { logger } from '../core/log'
import { systemActor, writeAudit } from '../core/audit'
import { lookupIp } from '../geo/readers'
import { publishLogRows, subscriberCount } from './hub'
import { checkIngestedBatch } from '../ops/alerts'
import { presentLog, type LogRecord } from './present'
import { LOG_FILES, PARSERS, type LogSource, type ParseContext } from './parse'

// Tails the proxy's access, error and WAF audit logs. Offsets live in the
// database and advance in the same transaction as the rows they cover, so a
// restart neither loses nor duplicates rows. A new inode (rotation) or a file
// shorter than the offset (truncation) starts from the beginning.

export const BATCH_ROWS = 100
export const BATCHES_PER_COMMIT = 20
const _READ_BYTES = 4 * 1024 * 1024
const _MAX_LINE_BYTES = 1024 * 1024

let _hostCache: { atMs: number; byName: Map<string, number> } | undefined

function _context(): ParseContext {
  return {
    hostIdOf: (domain) => _hostCache?.byName.get(domain) ?? null,
    countryOf: (ip) => { try { return lookupIp(ip).country } catch { return null } },
  }
}

async function _refreshHosts(): Promise<void> {
  if (_hostCache && Date.now() - _hostCache.atMs < 5_000) return
  const rows = await getDb().select().from(hostNames)
  _hostCache = { atMs: Date.now(), byName: new Map(rows.map((r) => [r.name, r.hostId])) }
}

async function _saveOffset(tx: Parameters<Parameters<typeof writeTransaction>[0]>[0], path: string, inode: number, offsetBytes: number) {
  const updatedAt = new Date().toISOString()
  await tx.insert(logOffsets).values({ path, inode, offsetBytes, updatedAt })
    .onConflictDoUpdate({ target: logOffsets.path, set: { inode, offsetBytes, updatedAt } })
}

/** Reads what was appended since the stored offset and stores it, in batches. Returns the rows ingested. */
export async function ingestFile(path: string, source: LogSource): Promise<number> {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  const stored = await getDb().select().from(logOffsets).where(eq(logOffsets.path, path)).get()
  let offset = stored && stored.inode === st.ino && stored.offsetBytes <= st.size ? stored.offsetBytes : 0
  if (offset === st.size) return 0
  await _refreshHosts()
  const ctx = _context()
  const fd = openSync(path, 'r')
  let total = 0
  try {
    while (offset < st.size) {
      const buf = Buffer.alloc(Math.min(_READ_BYTES, st.size - offset))
      const n = readSync(fd, buf, 0, buf.length, offset)
      if (n <= 0) break
      const end = buf.lastIndexOf(0x0a, n - 1)
      let chunkEnd = end + 1
      if (end < 0) {
        // No newline: a partial last line (wait for it), unless it is already over the line limit.
        if (n < _MAX_LINE_BYTES && offset + n >= st.size) break
        chunkEnd = n
      }
      // Lines with the byte offset just past each one, so every batch commits its own offset.
      const lines: Array<{ text: string; endOffset: number }> = []
      for (let pos = 0; pos < chunkEnd;) {
        let nl = buf.indexOf(0x0a, pos)
        if (nl < 0 || nl >= chunkEnd) nl = chunkEnd - 1
        const text = buf.subarray(pos, nl + 1).toString('utf8').replace(/\r?\n$/, '')
        if (text.trim()) lines.push({ text: text.length > _MAX_LINE_BYTES ? text.slice(0, _MAX_LINE_BYTES) : text, endOffset: offset + nl + 1 })
        pos = nl + 1
      }
      const nextOffset = offset + chunkEnd
      // Inserts of BATCH_ROWS rows, up to BATCHES_PER_COMMIT of them per transaction together with the offset.
      const perCommit = BATCH_ROWS * BATCHES_PER_COMMIT
      for (let i = 0; i < lines.length; i += perCommit) {
        const group = lines.slice(i, i + perCommit)
        const groupEnd = i + perCommit >= lines.length ? nextOffset : group.at(-1)!.endOffset
        const live = subscriberCount() > 0
        const statuses: Array<number | null | undefined> = []
        const inserted = await writeTransaction(async (tx) => {
          const out: LogRecord[] = []
          for (let j = 0; j < group.length; j += BATCH_ROWS) {
            const values = group.slice(j, j + BATCH_ROWS).map((l) => PARSERS[source](l.text, ctx))
            for (const v of values) statuses.push(v.status)
            // Ids are only needed when someone is tailing.
            if (live) out.push(...await tx.insert(logs).values(values).returning())
            else await tx.insert(logs).values(values)
          }
          await _saveOffset(tx, path, st.ino, groupEnd)
          return out
        })
        if (inserted.length) publishLogRows(inserted.map(presentLog))
        await checkIngestedBatch(source, statuses).catch(() => {})
        total += group.length
      }
      if (!lines.length) await writeTransaction((tx) => _saveOffset(tx, path, st.ino, nextOffset))
      offset = nextOffset
    }
  } finally {
    closeSync(fd)
  }
  return total
}

let _timer: NodeJS.Timeout | undefined
let _stopped = false
const _lastErrorAtMs = new Map<string, number>()

export function startIngester(intervalMs = 200): void {
  const dir = getConfig().proxy.logDir
  const tick = async () => {
    for (const { file, source } of LOG_FILES) {
      try { await ingestFile(join(dir, file), source) } catch (err) {
        const message = (err as Error).message
        logger.error(`log ingestion of ${file}: ${message}`)
        // The ingester's own errors land in the same table, at most once a minute per file.
        if (Date.now() - (_lastErrorAtMs.get(file) ?? 0) > 60_000) {
          _lastErrorAtMs.set(file, Date.now())
          await writeAudit(systemActor('log-ingester'), 'log_ingestion_error', { file, error: message }).catch(() => {})
        }
      }
    }
    if (!_stopped) _timer = setTimeout(tick, intervalMs)
  }
  tick()
}

export function stopIngester(): void {
  _stopped = true
  if (_timer) clearTimeout(_timer)
}
