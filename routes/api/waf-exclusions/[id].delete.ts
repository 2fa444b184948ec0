import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteWafExclusion } from '~/server/utils/hosts/waf-exclusions'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'WAF exclusion id')
  const out = await runOrDryRun(event, () => deleteWafExclusion(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : sendNoContent(event)
})
