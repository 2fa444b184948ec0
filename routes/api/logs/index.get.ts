import { defineEventHandler, getQuery } from 'h3'
import { listLogs } from '~/server/utils/logs/query'

export default defineEventHandler((event) => listLogs(getQuery(event)))
