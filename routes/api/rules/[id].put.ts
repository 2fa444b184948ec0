import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { ruleBody } from '~/server/utils/hosts/schemas'
import { updateRule } from '~/server/utils/hosts/rules'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'rule id')
  return updateRule(id, await readValidatedJson(event, ruleBody), auditContextOf(event))
})
