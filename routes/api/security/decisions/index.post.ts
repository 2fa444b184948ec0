import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { clientIpOf } from '~/server/utils/core/request'
import { banBody, banSource } from '~/server/utils/security/bans'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, banBody)
  // The caller's address as the panel sees it: a ban that reaches it needs confirm (bans.ts, guard rails).
  const ban = await banSource(body, auditContextOf(event), clientIpOf(event))
  setResponseStatus(event, 201)
  return ban
})
