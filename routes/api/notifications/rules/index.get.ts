import { defineEventHandler } from 'h3'
import { listRules } from '~/server/utils/ops/notify/queue'

export default defineEventHandler(() => listRules())
