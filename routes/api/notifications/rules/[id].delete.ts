import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteRule } from '~/server/utils/ops/notify/queue'

export default defineEventHandler(async (event) => {
  await deleteRule(parseIdParam(getRouterParam(event, 'id'), 'rule id'), auditContextOf(event))
  return sendNoContent(event)
})
