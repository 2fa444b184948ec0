// npm run db:migrate -- status | up [N] | down N
// Uses the same configuration (PANEL_DATABASE_URL, PANEL_DATA_DIR) and the same
// migration files as the server. Node 24 loads the TypeScript modules directly.
import { createClient } from '@libsql/client'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseConfig } from '../server/utils/core/config.ts'
import { readMigrationsFromDir, migrationStatus, migrateUp, migrateDown } from '../server/utils/core/migrations.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const [command = 'status', arg] = process.argv.slice(2)
const { config, errors } = parseConfig(process.env)
if (errors.length) {
  console.error(`invalid configuration:\n  - ${errors.join('\n  - ')}`)
  process.exit(1)
}
if (config.databaseUrl.startsWith('file:')) mkdirSync(dirname(config.databaseUrl.replace(/^file:(\/\/)?/, '')), { recursive: true })
const client = createClient({ url: config.databaseUrl, authToken: config.databaseAuthToken })
const migrations = readMigrationsFromDir(join(root, 'db/migrations'))
const target = arg === undefined ? undefined : Number(arg)
if (arg !== undefined && (!Number.isInteger(target) || target < 0)) {
  console.error('the target must be a migration number such as 0 or 3')
  process.exit(2)
}
try {
  if (command === 'status') {
    const s = await migrationStatus(client, migrations)
    console.log(`database: ${config.databaseUrl}\ncurrent version: ${s.current} (latest ${s.latest})`)
    for (const m of s.migrations) console.log(`  ${m.applied ? '[x]' : '[ ]'} ${String(m.version).padStart(4, '0')} ${m.name}`)
  } else if (command === 'up') {
    const done = await migrateUp(client, migrations, target ?? Infinity)
    console.log(done.length ? `applied: ${done.join(', ')}` : 'already up to date')
  } else if (command === 'down') {
    if (target === undefined) {
      console.error('down needs a target version: npm run db:migrate -- down 0')
      process.exit(2)
    }
    const done = await migrateDown(client, migrations, target)
    console.log(done.length ? `reverted: ${done.join(', ')}` : 'nothing to revert')
  } else {
    console.error('usage: npm run db:migrate -- status | up [N] | down N')
    process.exit(2)
  }
} catch (err) {
  console.error(err.message)
  process.exit(1)
} finally {
  client.close()
}
