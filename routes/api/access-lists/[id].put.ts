import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { accessListBody } from '~/server/utils/hosts/access-list-schemas'
import { updateAccessList } from '~/server/utils/hosts/access-lists'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'access list id')
  const body = await readValidatedJson(event, accessListBody)
  const out = await runOrDryRun(event, () => updateAccessList(id, body, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
