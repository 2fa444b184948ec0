import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { hostDnsCheck } from '~/server/utils/hosts/dns-host-check'

export default defineEventHandler((event) => hostDnsCheck(parseIdParam(getRouterParam(event, 'id'), 'host id')))
