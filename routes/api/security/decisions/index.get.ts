import { defineEventHandler, getQuery, setResponseHeaders } from 'h3'
import { sendJsonArray } from '~/server/utils/core/json-array-stream'
import { parseQueryWith } from '~/server/utils/core/validate'
import { decisionsQuery, listDecisions, presentDecisionRecord } from '~/server/utils/security/decisions'

export default defineEventHandler(async (event) => {
  const page = await listDecisions(parseQueryWith(decisionsQuery, getQuery(event)))
  setResponseHeaders(event, {
    'x-total-count': String(page.total),
    'x-decisions-synced-at': page.syncedAt,
    'x-decisions-source': page.source,
    ...(page.nextBeforeId === null ? {} : { 'x-next-before-id': String(page.nextBeforeId) }),
  })
  // Without paging the list can hold every active decision (500,000 and more): streamed.
  return sendJsonArray(event, page.records, (r) => presentDecisionRecord(r, page.nowMs))
})
