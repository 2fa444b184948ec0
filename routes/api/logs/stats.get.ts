import { defineEventHandler, getQuery } from 'h3'
import { logStats } from '~/server/utils/logs/query'

export default defineEventHandler((event) => logStats(getQuery(event)))
