import { defineEventHandler } from 'h3'
import { listRevisions } from '~/server/utils/proxy/revisions/revisions'

export default defineEventHandler(() => listRevisions())
