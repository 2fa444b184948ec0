import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { targetGroupBody } from '~/server/utils/hosts/schemas'
import { createTargetGroup } from '~/server/utils/hosts/target-groups'

export default defineEventHandler(async (event) => {
  const group = await createTargetGroup(await readValidatedJson(event, targetGroupBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return group
})
