import { defineEventHandler } from 'h3'
import { readProxyHealth } from '~/server/utils/proxy/sync/loop'
import { securityEngineHealth } from '~/server/utils/security/engine-health'
import { lastBackup } from '~/server/utils/ops/backups'
import { readGeoStatus } from '~/server/utils/geo/refresh'
import { readClientAddressHealth } from '~/server/utils/core/request'
import { listHealthProblems } from '~/server/utils/ops/problems'
import { listSuggestions } from '~/server/utils/ops/suggestions'

export default defineEventHandler(async () => ({
  proxy: await readProxyHealth(),
  security_engine: securityEngineHealth(),
  geoip: await readGeoStatus(),
  backups: lastBackup(),
  client_addresses: readClientAddressHealth(),
  problems: await listHealthProblems(),
  suggestions: await listSuggestions(),
}))
