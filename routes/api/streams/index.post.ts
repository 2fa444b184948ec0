import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { streamBody } from '~/server/utils/streams/schemas'
import { createStream } from '~/server/utils/streams/streams'
import { runOrDryRun } from '~/server/utils/proxy/revisions/dry-run'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, streamBody)
  const out = await runOrDryRun(event, () => createStream(body, auditContextOf(event)))
  if ('dryRun' in out) return out.dryRun
  setResponseStatus(event, 201)
  return out.result
})
