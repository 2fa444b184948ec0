import { execFile } from 'node:child_process'
import { closeSync, openSync, readSync, statSync, type Stats } from 'node:fs'
import { promisify } from 'node:util'
import { getClient, runWrite } from '../core/db'
import { logger } from '../core/log'
import { readPosition, savePosition } from './ingest-positions'
import { HEAD_BYTES, headFor, type Position } from './tailer'

// Bounding the WAF audit log, the ingester's last stage for each node folder.
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
  const pos = await readPosition(path)
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
  await runWrite(() => getClient().batch([savePosition(path, next)], 'write'))
  logger.info(`WAF audit log: cut ${cut} ingested bytes from ${path}`)
  return next
}
