import { defineEventHandler, getQuery } from 'h3'
import { z } from 'zod'
import { parseWith } from '~/server/utils/core/validate'
import { listJobs } from '~/server/utils/security/countries'

const query = z.object({
  country: z.string().max(2).optional(),
  limit: z.coerce.number().int('limit: must be an integer').min(1, 'must be at least 1').max(200, 'must be at most 200').default(20),
})

export default defineEventHandler((event) => {
  const q = parseWith(query, getQuery(event))
  return listJobs(q.country || undefined, q.limit)
})
