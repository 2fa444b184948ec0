import { defineTask } from 'nitropack/runtime'
import { systemActor } from '../../utils/core/audit'
import { refreshGeoDatabases } from '../../utils/geo/refresh'

export default defineTask({
  meta: { description: 'Downloads the country and ASN databases and swaps them in when they check out.' },
  async run() {
    return { result: (await refreshGeoDatabases(systemActor('geoip-refresh'))).last_refresh_status }
  },
})
