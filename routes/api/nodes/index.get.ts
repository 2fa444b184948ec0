import { defineEventHandler } from 'h3'
import { listNodes } from '~/server/utils/proxy/nodes/nodes'

export default defineEventHandler(() => listNodes())
