import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { createUserBody } from '~/server/utils/auth/schemas'
import { createUser } from '~/server/utils/auth/users'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, createUserBody)
  const user = await createUser(body, auditContextOf(event))
  setResponseStatus(event, 201)
  return user
})
