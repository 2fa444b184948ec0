import { defineEventHandler, getQuery } from 'h3'
import { parseQueryWith } from '~/server/utils/core/validate'
import { asnSearchQuery, searchAsns } from '~/server/utils/geo/asn-names'

export default defineEventHandler((event) => searchAsns(parseQueryWith(asnSearchQuery, getQuery(event))))
