import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { ruleBody, saveRule } from '~/server/utils/ops/notify/queue'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'rule id')
  return saveRule(id, await readValidatedJson(event, ruleBody), auditContextOf(event))
})
