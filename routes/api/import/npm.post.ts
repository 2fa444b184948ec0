import { defineEventHandler } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { readNpmUpload } from '~/server/utils/import/upload'
import { importNpmDatabase } from '~/server/utils/import/npm'

export default defineEventHandler(async (event) => {
  const { database, apply } = await readNpmUpload(event)
  return importNpmDatabase(database, apply, auditContextOf(event))
})
