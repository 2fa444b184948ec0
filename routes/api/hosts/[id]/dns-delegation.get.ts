import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { checkHostDelegation } from '~/server/utils/hosts/dns-delegation'

export default defineEventHandler((event) => checkHostDelegation(parseIdParam(getRouterParam(event, 'id'), 'host id')))
