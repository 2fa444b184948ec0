import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { wafExclusionFromLogBody } from '~/server/utils/hosts/schemas'
import { createWafExclusionFromLog } from '~/server/utils/hosts/waf-exclusions'

// One click from a waf_audit row of the logs screen: that rule, that host, that path.
export default defineEventHandler(async (event) => {
  const logId = parseIdParam(getRouterParam(event, 'id'), 'log id')
  const exclusion = await createWafExclusionFromLog(logId, await readValidatedJson(event, wafExclusionFromLogBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return exclusion
})
