import { defineEventHandler, setResponseStatus } from 'h3'
import { operationFailed } from '~/server/utils/core/errors'
import { auditContextOf } from '~/server/utils/core/audit'
import { createBackup } from '~/server/utils/ops/backups'

export default defineEventHandler(async (event) => {
  const meta = await createBackup('manual', auditContextOf(event))
  if (meta.status !== 'ok') throw operationFailed(`backup failed: ${meta.error}`)
  setResponseStatus(event, 201)
  return meta
})
