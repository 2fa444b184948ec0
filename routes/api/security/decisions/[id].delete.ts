import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteDecision } from '~/server/utils/security/decisions'

export default defineEventHandler(async (event) => {
  await deleteDecision(parseIdParam(getRouterParam(event, 'id'), 'decision id'), auditContextOf(event))
  return sendNoContent(event)
})
