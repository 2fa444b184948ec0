import { defineEventHandler } from 'h3'
import { listEngineBouncers } from '~/server/utils/security/engine-agents'

export default defineEventHandler(() => listEngineBouncers())
