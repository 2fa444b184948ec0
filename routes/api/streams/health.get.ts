import { defineEventHandler } from 'h3'
import { streamsHealth } from '~/server/utils/streams/health'

export default defineEventHandler(async () => ({ streams: await streamsHealth() }))
