import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { wafExclusionFromLogBody } from '~/server/utils/hosts/schemas'
import { createWafExclusionFromLog } from '~/server/utils/hosts/waf-exclusions'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

// One click from a waf_audit row of the logs screen: that rule, that host, that path.
export default defineEventHandler(async (event) => {
  const logId = parseIdParam(getRouterParam(event, 'id'), 'log id')
  const body = await readValidatedJson(event, wafExclusionFromLogBody)
  const out = await runOrDryRun(event, () => createWafExclusionFromLog(logId, body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
