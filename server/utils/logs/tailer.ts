import { createHash } from 'node:crypto'
import { closeSync, openSync, readdirSync, readSync, statSync, type Stats } from 'node:fs'
import { basename, dirname, extname, join } from 'node:path'

// Following an append-only log file that may be rotated (renamed away and
// replaced), truncated, or replaced in place. A position is (inode, offset,
// head): `head` fingerprints the file's first bytes (up to HEAD_BYTES, never
// past the offset) as "<length>:<sha1>", so a file that was replaced by
// another one is noticed even if it reuses the inode and has already grown
// past the offset (log lines start alike, but a first line of a few hundred
// bytes holds its own time and request). Pure file I/O: the database is the caller's.

export const HEAD_BYTES = 4096
export const MAX_LINE_BYTES = 1024 * 1024
const _READ_BYTES = 4 * 1024 * 1024

export interface Position {
  inode: number
  offset: number
  head: string
}
/** A complete line (text) or, for the part of an over-long line that is skipped, null; `end` = byte offset just past it. */
export interface Line {
  text: string | null
  end: number
}
/** What to read next: `file` from `from` to its current end. `final` means the file gets no more writes (a rotated one). */
export interface ReadPlan {
  file: string
  inode: number
  from: number
  size: number
  head: Buffer
  final: boolean
  reason: 'append' | 'rotated-rest' | 'new-file' | 'truncated'
}

function _statOrNull(path: string): Stats | null {
  try {
    return statSync(path)
  } catch {
    return null
  }
}

/** The first `HEAD_BYTES` bytes (fewer if the file is shorter). */
export function readHead(path: string): Buffer {
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    const buf = Buffer.alloc(HEAD_BYTES)
    const n = readSync(fd, buf, 0, HEAD_BYTES, 0)
    return buf.subarray(0, n)
  } catch {
    return Buffer.alloc(0)
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** The fingerprint to store with `offset`: of the first min(HEAD_BYTES, offset) bytes. */
export function headFor(head: Buffer, offset: number): string {
  const n = Math.min(HEAD_BYTES, offset, head.length)
  return n ? `${n}:${createHash('sha1').update(head.subarray(0, n)).digest('hex')}` : ''
}

/** Whether a file whose first bytes are `head` is the one `stored` was taken from. */
export function headMatches(head: Buffer, stored: string): boolean {
  if (!stored) return true
  const n = Number(stored.slice(0, stored.indexOf(':')))
  return head.length >= n && headFor(head, n) === stored
}

/**
 * Where the rotated-away file of `path` is now: a sibling whose name starts
 * with the same stem (`access.log.1`, `access-2026-11-22T10-00-00.000.log`)
 * and that still has the inode and head we were reading.
 */
export function findRotated(path: string, pos: Position): string | null {
  const dir = dirname(path),
    name = basename(path),
    stem = basename(name, extname(name))
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch {
    return null
  }
  for (const entry of entries) {
    if (entry === name || !entry.startsWith(stem) || entry.endsWith('.gz')) continue
    const candidate = join(dir, entry)
    const st = _statOrNull(candidate)
    if (st?.isFile() && st.ino === pos.inode && headMatches(readHead(candidate), pos.head)) return candidate
  }
  return null
}

/**
 * Decides what to read from `path` given the stored position: the appended
 * part, the rest of a rotated file (then the new one from 0), or a replaced or
 * truncated file from 0. Null when there is nothing to read.
 */
export function planRead(path: string, pos: Position | null): ReadPlan | null {
  const st = _statOrNull(path)
  if (pos && pos.offset > 0 && (!st || st.ino !== pos.inode)) {
    const rotated = findRotated(path, pos)
    if (rotated) {
      const rst = statSync(rotated)
      if (rst.size > pos.offset)
        return {
          file: rotated,
          inode: pos.inode,
          from: pos.offset,
          size: rst.size,
          head: readHead(rotated),
          final: true,
          reason: 'rotated-rest',
        }
    }
  }
  if (!st?.isFile()) return null
  const head = readHead(path)
  if (!pos) return st.size > 0 ? { file: path, inode: st.ino, from: 0, size: st.size, head, final: false, reason: 'new-file' } : null
  if (st.ino !== pos.inode) return { file: path, inode: st.ino, from: 0, size: st.size, head, final: false, reason: 'new-file' }
  if (st.size < pos.offset || !headMatches(head, pos.head))
    return { file: path, inode: st.ino, from: 0, size: st.size, head, final: false, reason: 'truncated' }
  if (st.size === pos.offset) return null
  return { file: path, inode: st.ino, from: pos.offset, size: st.size, head, final: false, reason: 'append' }
}

/**
 * Reads the complete lines of `plan.file` from `plan.from` to `plan.size`, in
 * groups of up to `groupLines`. A last line without its newline waits for it,
 * unless the file is final. A line longer than MAX_LINE_BYTES is cut there and
 * the rest of it skipped. Invalid UTF-8 becomes U+FFFD.
 */
export function* readLines(plan: ReadPlan, groupLines: number): Generator<Line[]> {
  const fd = openSync(plan.file, 'r')
  try {
    const buf = Buffer.alloc(_READ_BYTES)
    let pos = plan.from
    let skipping = false
    let group: Line[] = []
    while (pos < plan.size) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, plan.size - pos), pos)
      if (n <= 0) break
      let start = 0
      for (;;) {
        const nl = buf.indexOf(0x0a, start)
        if (nl < 0 || nl >= n) break
        if (skipping) {
          group.push({ text: null, end: pos + nl + 1 })
          skipping = false
        } else group.push({ text: _text(buf, start, nl), end: pos + nl + 1 })
        start = nl + 1
        if (group.length >= groupLines) {
          yield group
          group = []
        }
      }
      const rest = n - start
      const atEnd = pos + n >= plan.size
      if (rest > 0 && (skipping || rest >= MAX_LINE_BYTES || (atEnd && plan.final))) {
        // An over-long line (or the unterminated last line of a final file): keep its start, skip the rest.
        group.push({ text: skipping ? null : _text(buf, start, start + Math.min(rest, MAX_LINE_BYTES)), end: pos + n })
        skipping = !(atEnd && plan.final)
        pos += n
      } else {
        if (start === 0 && atEnd) break // a partial last line: wait for its newline
        pos += start
        if (atEnd) break
      }
    }
    if (group.length) yield group
  } finally {
    closeSync(fd)
  }
}

function _text(buf: Buffer, start: number, end: number): string {
  if (end > start && buf[end - 1] === 0x0d) end-- // CRLF
  return buf.toString('utf8', start, end)
}
