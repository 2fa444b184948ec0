import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteChannel } from '~/server/utils/ops/notify/channels'

export default defineEventHandler(async (event) => {
  await deleteChannel(parseIdParam(getRouterParam(event, 'id'), 'channel id'), auditContextOf(event))
  return sendNoContent(event)
})
