import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { banBody, banSource } from '~/server/utils/security/bans'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, banBody)
  const ban = await banSource(body, auditContextOf(event))
  setResponseStatus(event, 201)
  return ban
})
