import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { deleteStream } from '~/server/utils/streams/streams'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'stream id')
  const out = await runOrDryRun(event, () => deleteStream(id, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : sendNoContent(event)
})
