import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { assertIp, unbanIp, unbanIpBody } from '~/server/utils/security/decisions'

export default defineEventHandler(async (event) => {
  const { ip } = await readValidatedJson(event, unbanIpBody)
  return unbanIp(assertIp(ip), auditContextOf(event))
})
