import { defineEventHandler } from 'h3'
import { listStreams } from '~/server/utils/streams/streams'

export default defineEventHandler(() => listStreams())
