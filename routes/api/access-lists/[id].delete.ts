import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteAccessList } from '~/server/utils/hosts/access-lists'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'access list id')
  const out = await runOrDryRun(event, () => deleteAccessList(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : sendNoContent(event)
})
