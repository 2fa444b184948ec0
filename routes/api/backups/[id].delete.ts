import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteBackup } from '~/server/utils/ops/backups'

export default defineEventHandler(async (event) => {
  await deleteBackup(parseIdParam(getRouterParam(event, 'id'), 'backup id'), auditContextOf(event))
  return sendNoContent(event)
})
