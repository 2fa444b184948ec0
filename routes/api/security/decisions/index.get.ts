import { defineEventHandler, getQuery, setResponseHeaders } from 'h3'
import { sendJsonArray } from '~/server/utils/core/json-array-stream'
import { parseQueryWith } from '~/server/utils/core/validate'
import { decisionsQuery, listDecisions, presentDecisionRecord } from '~/server/utils/security/decisions'
import { PANEL_BAN_ORIGIN, panelBanReasonsFor } from '~/server/utils/security/bans'

export default defineEventHandler(async (event) => {
  const page = await listDecisions(parseQueryWith(decisionsQuery, getQuery(event)))
  setResponseHeaders(event, {
    'x-total-count': String(page.total),
    'x-decisions-synced-at': page.syncedAt,
    'x-decisions-source': page.source,
    ...(page.nextBeforeId === null ? {} : { 'x-next-before-id': String(page.nextBeforeId) }),
  })
  // The reasons of the panel's own bans: the engine's decision stream does not carry them.
  const reasons = await panelBanReasonsFor(page.records.filter((r) => r.origin === PANEL_BAN_ORIGIN).map((r) => r.value))
  // Without paging the list can hold every active decision (500,000 and more): streamed.
  return sendJsonArray(event, page.records, (r) => ({
    ...presentDecisionRecord(r, page.nowMs),
    reason: r.origin === PANEL_BAN_ORIGIN ? (reasons.get(r.value) ?? null) : null,
  }))
})
