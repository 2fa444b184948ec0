import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getLog } from '~/server/utils/logs/query'

export default defineEventHandler((event) => getLog(parseIdParam(getRouterParam(event, 'id'), 'log id')))
