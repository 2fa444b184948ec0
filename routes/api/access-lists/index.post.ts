import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { accessListBody } from '~/server/utils/hosts/access-list-schemas'
import { createAccessList } from '~/server/utils/hosts/access-lists'

export default defineEventHandler(async (event) => {
  const list = await createAccessList(await readValidatedJson(event, accessListBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return list
})
