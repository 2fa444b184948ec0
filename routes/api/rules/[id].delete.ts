import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteRule } from '~/server/utils/hosts/rules'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'rule id')
  const out = await runOrDryRun(event, () => deleteRule(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : sendNoContent(event)
})
