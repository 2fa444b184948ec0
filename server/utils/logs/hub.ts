import { tooManyRequests } from '../core/errors'
import type { ResolvedSession } from '../auth/sessions'
import type { FilterableRow } from './filters'

// The in-process fan-out of new log rows to live-tail subscribers. Each
// subscriber has its own filter and a bounded backlog: a client that cannot
// keep up is dropped rather than allowed to grow the panel's memory.

export type PresentedLog = FilterableRow & { id: number }
export interface LogSubscriber {
  matches(row: PresentedLog): boolean
  send(rows: PresentedLog[]): boolean
  drop(): void
}

/** Rows written to a subscriber's stream but not yet taken by its socket: over this, it is dropped. */
export const MAX_BACKLOG = 1000
/**
 * Live tails open at once, per session (or API token) and for the whole panel. Every tail runs
 * its filter, a `re:` regex maybe, on every ingested row: without a bound, one viewer opening
 * streams in a loop would slow ingestion for everyone. A few browser tabs stay well inside.
 */
export const MAX_TAILS_PER_SESSION = 4
export const MAX_TAILS_PER_SERVER = 64
/** What a refused client is told to wait before it tries again: long enough to close a tab. */
const _TAIL_RETRY_AFTER_SECONDS = 5

const _subscribers = new Set<LogSubscriber>()
const _tailsByOwner = new Map<string, number>()

/** Whose tails count together: one browser session, or one API token (all of its uses share it). */
export function tailOwnerOf(auth: ResolvedSession): string {
  return auth.apiToken ? `token:${auth.apiToken.id}` : `session:${auth.sessionId}`
}

/**
 * Adds a live tail for `owner`, or throws a 429 saying what to close when the session or the panel
 * has its maximum open. The returned function removes it; calling it again does nothing.
 */
export function subscribeToLogs(sub: LogSubscriber, owner: string): () => void {
  const mine = _tailsByOwner.get(owner) ?? 0
  if (mine >= MAX_TAILS_PER_SESSION)
    throw tooManyRequests(
      `this session already has ${MAX_TAILS_PER_SESSION} live log tails open, the most one session may hold: close one (another tab or window showing live logs) and try again`,
      _TAIL_RETRY_AFTER_SECONDS,
    )
  if (_countTails() >= MAX_TAILS_PER_SERVER)
    throw tooManyRequests(
      `the panel already serves ${MAX_TAILS_PER_SERVER} live log tails, the most it holds at once: close live-log tabs or scripts that follow /api/logs/tail, then try again`,
      _TAIL_RETRY_AFTER_SECONDS,
    )
  _tailsByOwner.set(owner, mine + 1)
  _subscribers.add(sub)
  let open = true
  return () => {
    if (!open) return
    open = false
    _subscribers.delete(sub)
    const left = (_tailsByOwner.get(owner) ?? 1) - 1
    if (left > 0) _tailsByOwner.set(owner, left)
    else _tailsByOwner.delete(owner)
  }
}

/** Tails counted until their stream is closed, including one the hub dropped whose socket is still closing. */
function _countTails(): number {
  let n = 0
  for (const count of _tailsByOwner.values()) n += count
  return n
}

export function publishLogRows(rows: PresentedLog[]): void {
  for (const sub of _subscribers) {
    let mine: PresentedLog[]
    try {
      mine = rows.filter((r) => sub.matches(r))
    } catch {
      mine = []
    }
    if (mine.length && !sub.send(mine)) {
      _subscribers.delete(sub)
      sub.drop()
    }
  }
}

export function subscriberCount(): number {
  return _subscribers.size
}

/**
 * An SSE comment line (`: text`), which h3's EventStream cannot send: it writes
 * through the stream's own writer, as its push() does. Pinned to h3 1.x.
 */
export function writeSseComment(stream: unknown, text: string): void {
  const s = stream as { _writer?: WritableStreamDefaultWriter<Uint8Array>; _writerIsClosed?: boolean; _encoder?: TextEncoder }
  if (!s._writer || s._writerIsClosed) return
  s._writer.write((s._encoder ?? new TextEncoder()).encode(`: ${text}\n\n`)).catch(() => {})
}
