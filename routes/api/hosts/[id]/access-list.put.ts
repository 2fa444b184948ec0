import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { hostAccessListBody } from '~/server/utils/hosts/access-list-schemas'
import { setHostAccessList } from '~/server/utils/hosts/access-lists'

export default defineEventHandler(async (event) => {
  const hostId = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const { access_list_id } = await readValidatedJson(event, hostAccessListBody)
  return setHostAccessList(hostId, access_list_id, auditContextOf(event))
})
