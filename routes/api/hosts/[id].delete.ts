import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteHost } from '~/server/utils/hosts/hosts'

export default defineEventHandler(async (event) => {
  await deleteHost(parseIdParam(getRouterParam(event, 'id'), 'host id'), auditContextOf(event))
  return sendNoContent(event)
})
