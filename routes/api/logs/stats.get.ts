import { defineEventHandler, getQuery, setResponseHeader } from 'h3'
import { computeLogStats } from '~/server/utils/logs/stats'
import { logFilterQuery } from '~/server/utils/logs/query-schema'
import { parseQueryWith } from '~/server/utils/core/validate'

export default defineEventHandler(async (event) => {
  const { stats, scanLimited } = await computeLogStats(parseQueryWith(logFilterQuery, getQuery(event)))
  if (scanLimited) setResponseHeader(event, 'x-logs-scan-limited', 'true') // a regex/CIDR filter stopped at its scan bound
  return stats
})
