import { defineEventHandler } from 'h3'
import { z } from 'zod'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { updateSettings } from '~/server/utils/core/settings'
import { runOrDryRun } from '~/server/utils/proxy/dry-run'

export default defineEventHandler(async (event) => {
  const patch = await readValidatedJson(event, z.record(z.string(), z.unknown()))
  const out = await runOrDryRun(event, () => updateSettings(patch, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
