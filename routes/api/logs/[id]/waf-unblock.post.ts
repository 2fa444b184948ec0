import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { wafUnblockBody } from '~/server/utils/hosts/schemas'
import { createWafExclusionSetFromLog } from '~/server/utils/hosts/waf-unblock'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

// The set of exclusions that unblocks a waf_audit row's request: one mutation, one revision.
export default defineEventHandler(async (event) => {
  const logId = parseIdParam(getRouterParam(event, 'id'), 'log id')
  const body = await readValidatedJson(event, wafUnblockBody)
  const out = await runOrDryRun(event, () => createWafExclusionSetFromLog(logId, body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
