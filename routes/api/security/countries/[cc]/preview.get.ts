import { defineEventHandler, getQuery, getRouterParam } from 'h3'
import { parseQueryWith } from '~/server/utils/core/validate'
import { requireSession } from '~/server/utils/auth/access'
import { clientIpOf } from '~/server/utils/core/request'
import { countryBanPreview, previewQuery } from '~/server/utils/access/replay'

export default defineEventHandler(async (event) => {
  const { days } = parseQueryWith(previewQuery, getQuery(event))
  return countryBanPreview(getRouterParam(event, 'cc') ?? '', days, { userId: requireSession(event).user.id, currentIp: clientIpOf(event) })
})
