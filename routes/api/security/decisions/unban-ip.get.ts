import { defineEventHandler, getQuery } from 'h3'
import { parseWith } from '~/server/utils/core/validate'
import { assertIp, previewUnbanIp, unbanIpQuery } from '~/server/utils/security/decisions'

// The preview of POST unban-ip: the decisions it would remove and the country ranges it would keep.
export default defineEventHandler((event) => {
  const { ip } = parseWith(unbanIpQuery, getQuery(event), 'query')
  return previewUnbanIp(assertIp(ip))
})
