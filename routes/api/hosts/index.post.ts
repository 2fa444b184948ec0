import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { hostBody } from '~/server/utils/hosts/schemas'
import { createHost } from '~/server/utils/hosts/hosts'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, hostBody)
  const host = await createHost(body, auditContextOf(event))
  setResponseStatus(event, 201)
  return host
})
