import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { ruleBody } from '~/server/utils/hosts/schemas'
import { createRule } from '~/server/utils/hosts/rules'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const rule = await createRule(hostId, await readValidatedJson(event, ruleBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return rule
})
