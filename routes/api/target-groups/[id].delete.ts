import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteTargetGroup } from '~/server/utils/hosts/target-groups'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'target group id')
  const out = await runOrDryRun(event, () => deleteTargetGroup(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : sendNoContent(event)
})
