import { defineEventHandler, getQuery } from 'h3'
import { parseQueryWith } from '~/server/utils/core/validate'
import { countDecisionsByOrigin, decisionOriginsQuery } from '~/server/utils/security/decisions'

export default defineEventHandler((event) => countDecisionsByOrigin(parseQueryWith(decisionOriginsQuery, getQuery(event))))
