import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { hostBody } from '~/server/utils/hosts/schemas'
import { createHost } from '~/server/utils/hosts/hosts'
import { refusedCustomHandlersAsBadInput } from '~/server/utils/hosts/custom-handlers'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, hostBody)
  const out = await runOrDryRun(event, () => refusedCustomHandlersAsBadInput(body, () => createHost(body, auditContextOf(event))))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
