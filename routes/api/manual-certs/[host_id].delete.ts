import { defineEventHandler, getQuery, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam, parseQueryWith } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteManualCert, manualCertDeleteQuery } from '~/server/utils/hosts/manual-certs'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'host_id'), 'host id')
  await deleteManualCert(hostId, parseQueryWith(manualCertDeleteQuery, getQuery(event)).revert, auditContextOf(event))
  return sendNoContent(event)
})
