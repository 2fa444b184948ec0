import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { requireSession } from '~/server/utils/auth/access'
import { clientIpOf } from '~/server/utils/core/request'
import { previewBody, previewPolicy } from '~/server/utils/access/replay'

// A read (nothing changes, no audit row) that takes a policy as its body.
export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, previewBody)
  return previewPolicy(body, { userId: requireSession(event).user.id, currentIp: clientIpOf(event) })
})
