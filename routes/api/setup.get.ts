import { defineEventHandler } from 'h3'
import { countUsers } from '~/server/utils/auth/users'

export default defineEventHandler(async () => ({ needs_setup: (await countUsers()) === 0 }))
