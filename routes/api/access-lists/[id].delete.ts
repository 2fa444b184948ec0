import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteAccessList } from '~/server/utils/hosts/access-lists'

export default defineEventHandler(async (event) => {
  await deleteAccessList(parseIdParam(getRouterParam(event, 'id'), 'access list id'), auditContextOf(event))
  return sendNoContent(event)
})
