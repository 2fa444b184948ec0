import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { streamBody } from '~/server/utils/streams/schemas'
import { updateStream } from '~/server/utils/streams/streams'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'stream id')
  const body = await readValidatedJson(event, streamBody)
  const out = await runOrDryRun(event, () => updateStream(id, body, auditContextOf(event)))
  return 'dryRun' in out ? out.dryRun : out.result
})
