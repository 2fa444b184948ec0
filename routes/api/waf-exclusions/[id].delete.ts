import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteWafExclusion } from '~/server/utils/hosts/waf-exclusions'

export default defineEventHandler(async (event) => {
  await deleteWafExclusion(parseIdParam(getRouterParam(event, 'id'), 'WAF exclusion id'), auditContextOf(event))
  return sendNoContent(event)
})
