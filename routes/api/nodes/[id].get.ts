import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getNode } from '~/server/utils/proxy/nodes/nodes'

export default defineEventHandler((event) => getNode(parseIdParam(getRouterParam(event, 'id'), 'node id')))
