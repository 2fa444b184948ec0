import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { addWhitelistEntry, whitelistBody } from '~/server/utils/security/whitelist'

export default defineEventHandler(async (event) => {
  const entry = await addWhitelistEntry(await readValidatedJson(event, whitelistBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return entry
})
