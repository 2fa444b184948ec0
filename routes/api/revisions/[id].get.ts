import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getRevision } from '~/server/utils/proxy/revisions/revisions'

export default defineEventHandler((event) => getRevision(parseIdParam(getRouterParam(event, 'id'), 'revision id')))
