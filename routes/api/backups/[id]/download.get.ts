import { defineEventHandler, getRouterParam, setResponseHeaders } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { backupFile } from '~/server/utils/ops/backups'

export default defineEventHandler((event) => {
  const { fileName, bytes } = backupFile(parseIdParam(getRouterParam(event, 'id'), 'backup id'))
  setResponseHeaders(event, { 'content-type': 'application/gzip', 'content-disposition': `attachment; filename="${fileName}"` })
  return bytes
})
