import { defineEventHandler } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { readGeoStatus, refreshGeoDatabases } from '~/server/utils/geo/refresh'

export default defineEventHandler(async (event) => {
  await refreshGeoDatabases(auditContextOf(event))
  return readGeoStatus()
})
