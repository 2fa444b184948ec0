import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { targetGroupBody } from '~/server/utils/hosts/schemas'
import { updateTargetGroup } from '~/server/utils/hosts/target-groups'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'target group id')
  const body = await readValidatedJson(event, targetGroupBody)
  const out = await runOrDryRun(event, () => updateTargetGroup(id, body, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
