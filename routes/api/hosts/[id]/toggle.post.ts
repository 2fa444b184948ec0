import { defineEventHandler, getRouterParam } from 'h3'
import { parseIdParam } from '~/server/utils/core/validate'
import { auditContextOf } from '~/server/utils/core/audit'
import { toggleHost } from '~/server/utils/hosts/hosts'

export default defineEventHandler((event) => toggleHost(parseIdParam(getRouterParam(event, 'id'), 'host id'), auditContextOf(event)))
