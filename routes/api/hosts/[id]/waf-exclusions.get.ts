import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { listWafExclusions } from '~/server/utils/hosts/waf-exclusions'

export default defineEventHandler((event) => listWafExclusions(parseIdParam(getRouterParam(event, 'id'), 'host id')))
