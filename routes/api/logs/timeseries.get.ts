import { defineEventHandler, getQuery, setResponseHeader } from 'h3'
import { computeLogTimeseries } from '~/server/utils/logs/stats'
import { logTimeseriesQuery } from '~/server/utils/logs/query-schema'
import { parseQueryWith } from '~/server/utils/core/validate'

export default defineEventHandler(async (event) => {
  const { points, scanLimited } = await computeLogTimeseries(parseQueryWith(logTimeseriesQuery, getQuery(event)))
  if (scanLimited) setResponseHeader(event, 'x-logs-scan-limited', 'true') // a regex/CIDR filter stopped at its scan bound
  return points
})
