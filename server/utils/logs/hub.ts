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
const _subscribers = new Set<LogSubscriber>()

export function subscribeToLogs(sub: LogSubscriber): () => void {
  _subscribers.add(sub)
  return () => {
    _subscribers.delete(sub)
  }
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
