import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { hostAccessListBody } from '~/server/utils/hosts/access-list-schemas'
import { setHostAccessList } from '~/server/utils/hosts/access-lists'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const { access_list_id } = await readValidatedJson(event, hostAccessListBody)
  const out = await runOrDryRun(event, () => setHostAccessList(hostId, access_list_id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
