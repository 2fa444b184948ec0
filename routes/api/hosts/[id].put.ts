import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { hostBody } from '~/server/utils/hosts/schemas'
import { updateHost } from '~/server/utils/hosts/hosts'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'host id')
  return updateHost(id, await readValidatedJson(event, hostBody), auditContextOf(event))
})
