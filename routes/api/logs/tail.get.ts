import { createEventStream, defineEventHandler, getQuery } from 'h3'
import { compileLogFilter } from '~/server/utils/logs/filters'
import { tailEventOf } from '~/server/utils/logs/fold-tail'
import { logFilterQuery } from '~/server/utils/logs/query-schema'
import { parseQueryWith } from '~/server/utils/core/validate'
import { MAX_BACKLOG, subscribeToLogs, tailOwnerOf, writeSseComment } from '~/server/utils/logs/hub'
import { requireSession } from '~/server/utils/auth/access'

const HEARTBEAT_MS = 15_000
/** Bytes the response may hold unsent before the client counts as too slow and is dropped. */
const MAX_UNSENT_BYTES = 8 * 1024 * 1024

// Server-sent events: every new row matching the filter, as `event: log` (a row sent before
// comes again when it changed: an access row given the WAF's verdict); without a source
// filter, a row folded into its access row comes as `event: folded` (docs/logs.md).
// A session past its tails, or the panel past its own, gets a 429 before the stream opens (hub.ts).
export default defineEventHandler((event) => {
  const filter = compileLogFilter(parseQueryWith(logFilterQuery, getQuery(event))) // a bad filter is a 400 before the stream opens
  const owner = tailOwnerOf(requireSession(event))
  const res = event.node.res
  const stream = createEventStream(event)
  let pending = 0
  const unsubscribe = subscribeToLogs(
    {
      matches: filter.matches,
      send(rows) {
        if (res.destroyed || pending > MAX_BACKLOG || res.writableLength > MAX_UNSENT_BYTES) return false
        pending += rows.length
        stream.push(rows.map((row) => tailEventOf(filter, row))).finally(() => {
          pending -= rows.length
        })
        return true
      },
      drop() {
        res.destroy()
      }, // frees what is buffered; onClosed below cleans up
    },
    owner,
  )
  writeSseComment(stream, 'connected') // sends the headers now, not at the first row
  const heartbeat = setInterval(() => writeSseComment(stream, 'heartbeat'), HEARTBEAT_MS)
  const cleanup = () => {
    clearInterval(heartbeat)
    unsubscribe()
  }
  res.on('close', cleanup)
  stream.onClosed(async () => {
    cleanup()
    await stream.close()
  })
  return stream.send()
})
