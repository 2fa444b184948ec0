import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getHost } from '~/server/utils/hosts/hosts'

export default defineEventHandler((event) => getHost(parseIdParam(getRouterParam(event, 'id'), 'host id')))
