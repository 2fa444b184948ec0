import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { restoreBackup } from '~/server/utils/ops/backups'

export default defineEventHandler(async (event) => {
  return restoreBackup(parseIdParam(getRouterParam(event, 'id'), 'backup id'), auditContextOf(event))
})
