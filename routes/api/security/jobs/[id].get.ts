import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getJob } from '~/server/utils/security/countries'

export default defineEventHandler((event) => getJob(parseIdParam(getRouterParam(event, 'id'), 'job id')))
