import { defineEventHandler } from 'h3'
import { listUserGroups } from '~/server/utils/auth/users'

// Admin only by its declaration (server/utils/openapi/areas/system.ts).
export default defineEventHandler(() => listUserGroups())
