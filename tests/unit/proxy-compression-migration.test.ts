import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { expect, it } from 'vitest'
import { migrateDown, migrateUp, readMigrationsFromDir } from '../../server/utils/core/migrations'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))
const BEFORE = MIGRATIONS.filter((m) => m.version < 39).at(-1)!.version
const freshClient = () => createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
const compressionRow = async (client: ReturnType<typeof createClient>) =>
  (await client.execute("SELECT value FROM settings WHERE key = 'proxy.compression'")).rows.map((r) => r.value)

// Migration 0039: compression is on for a new panel (no row: the setting's default),
// and recorded "off" for a database in use, so an upgrade pushes the same configuration.
it('migration 0039 records compression off for a database in use, and its down step takes it out again', async () => {
  const client = freshClient()
  await migrateUp(client, MIGRATIONS, BEFORE)
  await client.execute(
    "INSERT INTO users (email, role, created_at, updated_at) VALUES ('admin@example.test', 'admin', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
  )
  await migrateUp(client, MIGRATIONS, 39)
  expect(await compressionRow(client)).toEqual(['false'])
  const columns = (await client.execute('PRAGMA table_info(hosts)')).rows.map((r) => ({ name: r.name, dflt: r.dflt_value }))
  expect(columns).toContainEqual({ name: 'compression', dflt: "'inherit'" })

  await migrateDown(client, MIGRATIONS, BEFORE)
  expect(await compressionRow(client)).toEqual([])
  expect((await client.execute('PRAGMA table_info(hosts)')).rows.map((r) => r.name)).not.toContain('compression')
  client.close()
})

it('migration 0039 leaves a new database without a row: the default (on) applies', async () => {
  const client = freshClient()
  await migrateUp(client, MIGRATIONS, 39)
  expect(await compressionRow(client)).toEqual([])
  client.close()
})
