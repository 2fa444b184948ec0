import { defineEventHandler } from 'h3'
import { listBackups } from '~/server/utils/ops/backups'

// Admin only (its declaration in server/utils/openapi/areas/ops.ts): a backup holds every credential hash and sealed secret the API hides (issue 33).
export default defineEventHandler(() => listBackups())
