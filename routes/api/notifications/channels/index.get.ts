import { defineEventHandler } from 'h3'
import { listChannels } from '~/server/utils/ops/notify/channels'

export default defineEventHandler(() => listChannels())
