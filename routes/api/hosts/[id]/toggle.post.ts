import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { toggleHost } from '~/server/utils/hosts/hosts'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'host id')
  const out = await runOrDryRun(event, () => toggleHost(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
