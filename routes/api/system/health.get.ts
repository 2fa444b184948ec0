import { defineEventHandler } from 'h3'
import { readSystemHealth } from '~/server/utils/ops/health'

export default defineEventHandler(() => readSystemHealth())
