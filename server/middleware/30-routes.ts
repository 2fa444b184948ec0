import { defineEventHandler } from 'h3'
import { badRequest, methodNotAllowed, noRoute } from '../utils/core/errors'
import { routeMatchOf } from '../utils/openapi/route-table'

// Every API path is matched against the OpenAPI registry before Nitro's router
// (which decodes first, so an encoded `?` or `/` in a parameter could land on
// another route): an unknown path is a 404, a method the path does not serve a
// 405 with Allow, a path parameter outside its declared schema a 400. The access
// layer (10-auth) has already used the same match to enforce the declared access.
export default defineEventHandler((event) => {
  const path = event.path.split('?')[0]!
  if (!path.startsWith('/api/') && path !== '/auth/forward' && path !== '/healthz') return
  const match = routeMatchOf(event)
  if (match.kind === 'documented') return
  if (match.kind === 'no-route') throw noRoute(event.method, path)
  if (match.kind === 'bad-parameter') throw badRequest(match.message)
  throw methodNotAllowed(event.method, path, match.allow)
})
