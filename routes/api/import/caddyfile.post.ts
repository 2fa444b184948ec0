import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { caddyfileImportBody } from '~/server/utils/import/schemas'
import { importCaddyfile } from '~/server/utils/import/caddyfile'

export default defineEventHandler(async (event) => {
  const { caddyfile, apply } = await readValidatedJson(event, caddyfileImportBody)
  return importCaddyfile(caddyfile, apply, auditContextOf(event))
})
