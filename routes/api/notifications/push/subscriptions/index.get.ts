import { defineEventHandler } from 'h3'
import { listSubscriptions } from '~/server/utils/ops/notify/push'

export default defineEventHandler(() => listSubscriptions())
