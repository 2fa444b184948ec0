import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { targetGroupBody } from '~/server/utils/hosts/schemas'
import { updateTargetGroup } from '~/server/utils/hosts/target-groups'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'target group id')
  return updateTargetGroup(id, await readValidatedJson(event, targetGroupBody), auditContextOf(event))
})
