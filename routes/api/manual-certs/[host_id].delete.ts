import { defineEventHandler, getQuery, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteManualCert, parseRevert } from '~/server/utils/hosts/manual-certs'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'host_id'), 'host id')
  await deleteManualCert(hostId, parseRevert(getQuery(event).revert), auditContextOf(event))
  return sendNoContent(event)
})
