import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { ruleBody, saveRule } from '~/server/utils/ops/notify/queue'

export default defineEventHandler(async (event) => {
  const rule = await saveRule(null, await readValidatedJson(event, ruleBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return rule
})
