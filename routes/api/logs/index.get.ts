import { defineEventHandler, getQuery, setResponseHeader } from 'h3'
import { listLogs } from '~/server/utils/logs/query'

export default defineEventHandler(async (event) => {
  const { rows, scanLimited } = await listLogs(getQuery(event))
  if (scanLimited) setResponseHeader(event, 'x-logs-scan-limited', 'true') // a regex/CIDR filter stopped at its scan bound
  return rows
})
