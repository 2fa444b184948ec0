import { defineEventHandler } from 'h3'
import { listWhitelist } from '~/server/utils/security/whitelist'

export default defineEventHandler(() => listWhitelist())
