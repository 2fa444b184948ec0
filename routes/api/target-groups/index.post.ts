import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { targetGroupBody } from '~/server/utils/hosts/schemas'
import { createTargetGroup } from '~/server/utils/hosts/target-groups'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, targetGroupBody)
  const out = await runOrDryRun(event, () => createTargetGroup(body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
