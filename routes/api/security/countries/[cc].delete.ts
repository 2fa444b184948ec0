import { defineEventHandler, getRouterParam } from 'h3'
import { auditContextOf } from '~/server/utils/core/audit'
import { revokeCountry } from '~/server/utils/security/countries'

export default defineEventHandler((event) => revokeCountry(getRouterParam(event, 'cc') ?? '', auditContextOf(event)))
