import { Readable } from 'node:stream'
import { sendStream, setResponseHeader, type H3Event } from 'h3'

// Above this many items an array answer is written in batches instead of as one string:
// 500,000 decisions serialised at once held about 100 MB of JSON plus every presented
// object (the panel peaked at 730 MB); written in batches through a Node stream, the
// socket's backpressure bounds what is held at once.
const _STREAM_ABOVE = 1000
const _BATCH = 500

function* _jsonArrayChunks<T, U>(items: readonly T[], present: (item: T) => U): Generator<string> {
  yield '['
  for (let start = 0; start < items.length; start += _BATCH) {
    const end = Math.min(start + _BATCH, items.length)
    const parts: string[] = []
    for (let i = start; i < end; i++) parts.push(JSON.stringify(present(items[i]!)))
    yield (start === 0 ? '' : ',') + parts.join(',')
  }
  yield ']'
}

/**
 * Answers `items.map(present)` as a JSON array: small arrays as usual, large ones streamed in
 * batches (each item is presented only when its batch is written). The bytes are the same.
 */
export function sendJsonArray<T, U>(event: H3Event, items: readonly T[], present: (item: T) => U): U[] | Promise<void> {
  if (items.length <= _STREAM_ABOVE) return items.map(present)
  setResponseHeader(event, 'content-type', 'application/json')
  return sendStream(event, Readable.from(_jsonArrayChunks(items, present), { objectMode: false }))
}
