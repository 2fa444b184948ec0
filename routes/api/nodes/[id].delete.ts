import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteNode } from '~/server/utils/proxy/nodes/nodes'

export default defineEventHandler(async (event) => {
  await deleteNode(parseIdParam(getRouterParam(event, 'id'), 'node id'), auditContextOf(event))
  return sendNoContent(event)
})
