import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { ruleBody } from '~/server/utils/hosts/schemas'
import { updateRule } from '~/server/utils/hosts/rules'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'rule id')
  const body = await readValidatedJson(event, ruleBody)
  const out = await runOrDryRun(event, () => updateRule(id, body, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
