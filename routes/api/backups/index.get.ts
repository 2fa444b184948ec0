import { defineEventHandler } from 'h3'
import { listBackups } from '~/server/utils/ops/backups'

export default defineEventHandler(() => listBackups())
