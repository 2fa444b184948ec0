import { defineEventHandler } from 'h3'
import { listSettingsForDisplay } from '~/server/utils/core/settings'

export default defineEventHandler(() => listSettingsForDisplay())
