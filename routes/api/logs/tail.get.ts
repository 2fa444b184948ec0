import { createEventStream, defineEventHandler, getQuery } from 'h3'
import { compileLogFilter } from '~/server/utils/logs/filters'
import { MAX_BACKLOG, subscribeToLogs, writeSseComment } from '~/server/utils/logs/hub'

const HEARTBEAT_MS = 15_000

// Server-sent events: every new row matching the filter, as `event: log`.
export default defineEventHandler((event) => {
  const filter = compileLogFilter(getQuery(event)) // a bad filter is a 400 before the stream opens
  const stream = createEventStream(event)
  let backlog = 0
  const unsubscribe = subscribeToLogs({
    matches: filter.matches,
    send(rows) {
      if (backlog > MAX_BACKLOG) return false
      for (const row of rows) {
        backlog++
        stream.push({ event: 'log', id: String(row.id), data: JSON.stringify(row) }).finally(() => { backlog-- })
      }
      return true
    },
    drop() { stream.close() },
  })
  writeSseComment(stream, 'connected') // sends the headers now, not at the first row
  const heartbeat = setInterval(() => { writeSseComment(stream, 'heartbeat') }, HEARTBEAT_MS)
  stream.onClosed(async () => { clearInterval(heartbeat); unsubscribe(); await stream.close() })
  return stream.send()
})
