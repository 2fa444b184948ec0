import { defineEventHandler, getQuery } from 'h3'
import { parseQueryWith } from '~/server/utils/core/validate'
import { jobsQuery, listJobs } from '~/server/utils/security/countries'

export default defineEventHandler((event) => {
  const q = parseQueryWith(jobsQuery, getQuery(event))
  return listJobs(q.country || undefined, q.limit)
})
