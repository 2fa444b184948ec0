import { defineEventHandler, getQuery } from 'h3'
import { isIP } from 'node:net'
import { badRequest } from '~/server/utils/core/errors'
import { parseQueryWith } from '~/server/utils/core/validate'
import { geoLookupQuery, lookupIp } from '~/server/utils/geo/readers'

export default defineEventHandler((event) => {
  const { ip } = parseQueryWith(geoLookupQuery, getQuery(event))
  if (!isIP(ip)) throw badRequest('ip: must be an IPv4 or IPv6 address')
  return lookupIp(ip)
})
