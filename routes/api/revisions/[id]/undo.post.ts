import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { undoRevision } from '~/server/utils/proxy/revisions/revisions'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'revision id')
  const out = await runOrDryRun(event, () => undoRevision(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
