import { defineRecordedTask } from '../../utils/core/recorded-task'
import { systemActor } from '../../utils/core/audit'
import { refreshGeoDatabases } from '../../utils/geo/refresh'

// Recorded: /api/system/health shows this task's last run and what it returned.
// A refresh that failed (the old files stay, the audit row says why) is recorded as failed.
export default defineRecordedTask({
  meta: { description: 'Downloads the country and ASN databases and swaps them in when they check out.' },
  async run() {
    const state = await refreshGeoDatabases(systemActor('geoip-refresh'))
    // Each error is a whole sentence naming the database, its URL and the setting to change.
    if (state.last_refresh_status === 'failed') throw new Error(`geolocation download failed. ${Object.values(state.errors).join(' ')}`)
    return state.last_refresh_status
  },
})
