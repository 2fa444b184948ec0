import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam, readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { channelBody, saveChannel } from '~/server/utils/ops/notify/channels'

export default defineEventHandler(async (event) => {
  const id = parseIdParam(getRouterParam(event, 'id'), 'channel id')
  return saveChannel(id, await readValidatedJson(event, channelBody), auditContextOf(event))
})
