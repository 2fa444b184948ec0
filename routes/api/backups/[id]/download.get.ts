import { defineEventHandler, getRouterParam, setResponseHeaders } from 'h3'
import { requireAdmin } from '~/server/utils/auth/access'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { downloadBackup } from '~/server/utils/ops/backups'

// Admin only, and audited: the file holds every password hash and sealed secret of the panel (issue 33).
export default defineEventHandler(async (event) => {
  requireAdmin(event)
  const { fileName, bytes } = await downloadBackup(parseIdParam(getRouterParam(event, 'id'), 'backup id'), auditContextOf(event))
  setResponseHeaders(event, { 'content-type': 'application/gzip', 'content-disposition': `attachment; filename="${fileName}"` })
  return bytes
})
