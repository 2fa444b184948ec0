import { defineEventHandler } from 'h3'
import { readProxyHealth } from '~/server/utils/proxy/loop'

// Parts for the security engine, geolocation and backups join as those land.
export default defineEventHandler(async () => ({ proxy: await readProxyHealth() }))
