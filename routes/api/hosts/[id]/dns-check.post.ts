import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { checkHostDnsNow } from '~/server/utils/hosts/dns-host-check'

export default defineEventHandler((event) => checkHostDnsNow(parseIdParam(getRouterParam(event, 'id'), 'host id'), auditContextOf(event)))
