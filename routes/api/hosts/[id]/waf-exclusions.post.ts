import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { wafExclusionBody } from '~/server/utils/hosts/schemas'
import { createWafExclusion } from '~/server/utils/hosts/waf-exclusions'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const body = await readValidatedJson(event, wafExclusionBody)
  const out = await runOrDryRun(event, () => createWafExclusion(hostId, body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
