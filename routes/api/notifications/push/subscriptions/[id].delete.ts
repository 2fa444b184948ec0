import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteSubscription } from '~/server/utils/ops/notify/push'

export default defineEventHandler(async (event) => {
  await deleteSubscription(parseIdParam(getRouterParam(event, 'id'), 'subscription id'), auditContextOf(event))
  return sendNoContent(event)
})
