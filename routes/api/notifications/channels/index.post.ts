import { defineEventHandler, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { channelBody, saveChannel } from '~/server/utils/ops/notify/channels'

export default defineEventHandler(async (event) => {
  const channel = await saveChannel(null, await readValidatedJson(event, channelBody), auditContextOf(event))
  setResponseStatus(event, 201)
  return channel
})
