import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { wafExclusionBody } from '~/server/utils/hosts/schemas'
import { createWafExclusion } from '~/server/utils/hosts/waf-exclusions'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const exclusion = await createWafExclusion(hostId, await readValidatedJson(event, wafExclusionBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return exclusion
})
