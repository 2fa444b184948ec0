import { defineEventHandler, getQuery } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { diffRevisions } from '~/server/utils/proxy/revisions/revisions'

// ?from=&to= : what changed from one revision to the other (either order).
export default defineEventHandler((event) => {
  const q = getQuery(event)
  return diffRevisions(parseIdParam(q.from as string | undefined, 'from'), parseIdParam(q.to as string | undefined, 'to'))
})
