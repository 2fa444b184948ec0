import { defineEventHandler, getRouterParam, sendNoContent } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { removeWhitelistEntry } from '~/server/utils/security/whitelist'

export default defineEventHandler(async (event) => {
  await removeWhitelistEntry(getRouterParam(event, 'value', { decode: true }) ?? '', auditContextOf(event))
  return sendNoContent(event)
})
