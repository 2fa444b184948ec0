import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { ruleBody } from '~/server/utils/hosts/schemas'
import { createRule } from '~/server/utils/hosts/rules'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const body = await readValidatedJson(event, ruleBody)
  const out = await runOrDryRun(event, () => createRule(hostId, body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
