import { defineEventHandler, getRouterParam, setResponseStatus } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { sendTest } from '~/server/utils/ops/notify/queue'

export default defineEventHandler(async (event) => {
  const result = await sendTest(parseIdParam(getRouterParam(event, 'id'), 'channel id'))
  if (result.status !== 'ok') setResponseStatus(event, 502)
  return result.status === 'ok' ? result : { error: `test delivery failed: ${result.error}` }
})
