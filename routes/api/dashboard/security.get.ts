import { defineEventHandler } from 'h3'
import { securityLast24h } from '~/server/utils/ops/dashboards'

export default defineEventHandler(() => securityLast24h())
