import { defineEventHandler, getQuery, setResponseHeader } from 'h3'
import { listLogs } from '~/server/utils/logs/query'
import { logListQuery } from '~/server/utils/logs/query-schema'
import { parseQueryWith } from '~/server/utils/core/validate'

export default defineEventHandler(async (event) => {
  const { rows, scanLimited } = await listLogs(parseQueryWith(logListQuery, getQuery(event)))
  if (scanLimited) setResponseHeader(event, 'x-logs-scan-limited', 'true') // a regex/CIDR filter stopped at its scan bound
  return rows
})
