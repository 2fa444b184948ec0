import { defineEventHandler } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { settingsPatchBody, updateSettings } from '~/server/utils/core/settings'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const patch = await readValidatedJson(event, settingsPatchBody)
  const out = await runOrDryRun(event, () => updateSettings(patch, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
