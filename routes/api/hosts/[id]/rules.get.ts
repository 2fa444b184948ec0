import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { listRulesOfHost } from '~/server/utils/hosts/rules'

export default defineEventHandler((event) => listRulesOfHost(parseIdParam(getRouterParam(event, 'id'), 'host id')))
