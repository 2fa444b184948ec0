import { defineEventHandler, getQuery } from 'h3'
import { logTimeseries } from '~/server/utils/logs/query'

export default defineEventHandler((event) => logTimeseries(getQuery(event)))
