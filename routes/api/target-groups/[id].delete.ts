import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteTargetGroup } from '~/server/utils/hosts/target-groups'

export default defineEventHandler(async (event) => {
  await deleteTargetGroup(parseIdParam(getRouterParam(event, 'id'), 'target group id'), auditContextOf(event))
  return sendNoContent(event)
})
