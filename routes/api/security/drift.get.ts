import { defineEventHandler } from 'h3'
import { readDrift } from '~/server/utils/security/drift'

export default defineEventHandler(() => readDrift())
