import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { settingsPatchBody, updateSettings } from '~/server/utils/core/settings'

export default defineEventHandler(async (event) => {
  const patch = await readValidatedJson(event, settingsPatchBody)
  return updateSettings(patch, auditContextOf(event))
})
