import { defineEventHandler } from 'h3'
import { listScenarios } from '~/server/utils/security/scenarios'
import { readDrift } from '~/server/utils/security/drift'

export default defineEventHandler(async () => ({ ...(await listScenarios()), drift_detected: readDrift().scenarios.drift_detected }))
