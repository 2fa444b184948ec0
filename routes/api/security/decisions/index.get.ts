import { defineEventHandler, getQuery, setResponseHeaders } from 'h3'
import { parseQueryWith } from '~/server/utils/core/validate'
import { decisionsQuery, listDecisions } from '~/server/utils/security/decisions'

export default defineEventHandler(async (event) => {
  const page = await listDecisions(parseQueryWith(decisionsQuery, getQuery(event)))
  setResponseHeaders(event, {
    'x-total-count': String(page.total),
    'x-decisions-synced-at': page.syncedAt,
    'x-decisions-source': page.source,
    ...(page.nextBeforeId === null ? {} : { 'x-next-before-id': String(page.nextBeforeId) }),
  })
  return page.decisions
})
