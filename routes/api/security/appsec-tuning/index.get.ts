import { defineEventHandler } from 'h3'
import { readAppsecTuning } from '~/server/utils/security/appsec'
import { readDrift } from '~/server/utils/security/drift'

export default defineEventHandler(() => readAppsecTuning(readDrift().appsec.drift_detected))
