import { defineEventHandler, getQuery } from 'h3'
import { parseQueryWith } from '~/server/utils/core/validate'
import { checkForwardAuthReachability, forwardAuthCheckQuery } from '~/server/utils/proxy/forward-auth-check'

export default defineEventHandler((event) => {
  parseQueryWith(forwardAuthCheckQuery, getQuery(event))
  return checkForwardAuthReachability()
})
