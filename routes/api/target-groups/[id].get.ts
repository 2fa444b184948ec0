import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getTargetGroup } from '~/server/utils/hosts/target-groups'

export default defineEventHandler((event) => getTargetGroup(parseIdParam(getRouterParam(event, 'id'), 'target group id')))
