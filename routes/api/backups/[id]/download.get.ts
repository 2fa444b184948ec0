import { defineEventHandler, getRouterParam, setResponseHeaders } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { downloadBackup } from '~/server/utils/ops/backups'

// Admin only (its declaration in server/utils/openapi/areas/ops.ts), and audited: the file holds every password hash and sealed secret of the panel (issue 33).
export default defineEventHandler(async (event) => {
  const { fileName, bytes } = await downloadBackup(parseIdParam(getRouterParam(event, 'id'), 'backup id'), auditContextOf(event))
  setResponseHeaders(event, { 'content-type': 'application/gzip', 'content-disposition': `attachment; filename="${fileName}"` })
  return bytes
})
