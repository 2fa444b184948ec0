import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { getManualCert } from '~/server/utils/hosts/manual-certs'

export default defineEventHandler((event) => getManualCert(parseIdParam(getRouterParam(event, 'host_id'), 'host id')))
