import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { emptyBody } from '~/server/utils/auth/schemas'
import { beginPasskeyLogin } from '~/server/utils/auth/passkeys'
import { clientIpOf } from '~/server/utils/core/request'

// A login without an email: options with a single-use challenge that any key of this panel may answer.
// At most 10 unanswered per client address (429 with Retry-After beyond).
export default defineEventHandler(async (event) => {
  await readValidatedJson(event, emptyBody)
  return beginPasskeyLogin(clientIpOf(event))
})
