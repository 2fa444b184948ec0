import { defineEventHandler } from 'h3'
import { trafficLast24h } from '~/server/utils/ops/dashboards'

export default defineEventHandler(() => trafficLast24h())
