import { defineEventHandler, getRequestHeader, setResponseStatus } from 'h3'
import { readValidatedJson } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { pushSubscriptionBody, saveSubscription } from '~/server/utils/ops/notify/push'

export default defineEventHandler(async (event) => {
  const body = await readValidatedJson(event, pushSubscriptionBody)
  const { created, subscription } = await saveSubscription(
    body,
    event.context.auth?.user.id ?? null,
    getRequestHeader(event, 'user-agent')?.slice(0, 512) ?? null,
    auditContextOf(event),
  )
  setResponseStatus(event, created ? 201 : 200)
  return subscription
})
