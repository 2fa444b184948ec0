import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { accessListBody } from '~/server/utils/hosts/access-list-schemas'
import { updateAccessList } from '~/server/utils/hosts/access-lists'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'access list id')
  return updateAccessList(id, await readValidatedJson(event, accessListBody), auditContextOf(event))
})
