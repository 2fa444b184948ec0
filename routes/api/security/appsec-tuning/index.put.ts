import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { appsecTuningBody, readAppsecTuning, updateAppsecTuning } from '~/server/utils/security/appsec'
import { checkDrift } from '~/server/utils/security/drift'

export default defineEventHandler(async (event) => {
  await updateAppsecTuning(await readValidatedJson(event, appsecTuningBody), auditContextOf(event))
  return readAppsecTuning((await checkDrift()).appsec.drift_detected)
})
