import { defineEventHandler } from 'h3'
import { listRevisions } from '~/server/utils/proxy/revisions'

export default defineEventHandler(() => listRevisions())
