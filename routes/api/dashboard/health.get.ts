import { defineEventHandler } from 'h3'
import { readProxyHealth } from '~/server/utils/proxy/loop'
import { securityEngineHealth } from '~/server/utils/security/engine-health'

// Parts for geolocation and backups join as those land.
export default defineEventHandler(async () => ({ proxy: await readProxyHealth(), security_engine: securityEngineHealth() }))
