import { defineEventHandler, setResponseStatus } from 'h3'
import { createError } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { createBackup } from '~/server/utils/ops/backups'

export default defineEventHandler(async (event) => {
  const meta = await createBackup('manual', auditContextOf(event))
  if (meta.status !== 'ok') throw createError({ statusCode: 500, statusMessage: 'Internal Server Error', message: `backup failed: ${meta.error}` })
  setResponseStatus(event, 201)
  return meta
})
