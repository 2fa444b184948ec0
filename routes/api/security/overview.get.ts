import { defineEventHandler } from 'h3'
import { readSecurityOverview } from '~/server/utils/security/overview'

export default defineEventHandler(() => readSecurityOverview())
