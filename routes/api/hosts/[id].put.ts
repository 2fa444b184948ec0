import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { hostBody } from '~/server/utils/hosts/schemas'
import { updateHost } from '~/server/utils/hosts/hosts'
import { refusedCustomHandlersAsBadInput } from '~/server/utils/hosts/custom-handlers'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const body = await readValidatedJson(event, hostBody)
  const out = await runOrDryRun(event, () => refusedCustomHandlersAsBadInput(body, () => updateHost(id, body, auditContextOf(event))))
  return 'dryRun' in out ? out.dryRun : out.result
})
