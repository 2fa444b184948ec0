import { defineEventHandler, getQuery } from 'h3'
import { parseWith } from '~/server/utils/core/validate'
import { decisionsQuery, listDecisions } from '~/server/utils/security/decisions'

export default defineEventHandler((event) => listDecisions(parseWith(decisionsQuery, getQuery(event))))
