import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { emptyBody } from '~/server/utils/auth/schemas'
import { beginPasskeyLogin } from '~/server/utils/auth/passkeys'

// A login without an email: options with a single-use challenge that any key of this panel may answer.
export default defineEventHandler(async (event) => {
  await readValidatedJson(event, emptyBody)
  return beginPasskeyLogin()
})
