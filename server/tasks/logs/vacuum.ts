import { defineTask } from 'nitropack/runtime'
import { vacuumDatabase } from '../../utils/logs/retention'

export default defineTask({
  meta: { description: 'Compacts the database file (monthly).' },
  async run() { await vacuumDatabase(); return { result: 'ok' } },
})
