import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getStream } from '~/server/utils/streams/streams'

export default defineEventHandler((event) => getStream(parseIdParam(getRouterParam(event, 'id'), 'stream id')))
