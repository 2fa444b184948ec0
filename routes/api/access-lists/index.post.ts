import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { accessListBody } from '~/server/utils/hosts/access-list-schemas'
import { createAccessList } from '~/server/utils/hosts/access-lists'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, accessListBody)
  const out = await runOrDryRun(event, () => createAccessList(body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
