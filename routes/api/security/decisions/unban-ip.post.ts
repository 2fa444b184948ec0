import { defineEventHandler } from 'h3'
import { z } from 'zod'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { assertIp, unbanIp } from '~/server/utils/security/decisions'

const body = z.strictObject({ ip: z.string().max(64) })

export default defineEventHandler(async (event) => {
  const { ip } = await readValidatedJson(event, body)
  return unbanIp(assertIp(ip), auditContextOf(event))
})
