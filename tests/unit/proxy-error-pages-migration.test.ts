import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { expect, it } from 'vitest'
import { migrateDown, migrateUp, readMigrationsFromDir } from '../../server/utils/core/migrations'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))
const BEFORE = MIGRATIONS.filter((m) => m.version < 41).at(-1)!.version
const freshClient = () => createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
const pagesRow = async (client: ReturnType<typeof createClient>) =>
  (await client.execute("SELECT value FROM settings WHERE key = 'proxy.error_pages'")).rows.map((r) => r.value)
const columns = async (client: ReturnType<typeof createClient>, table: string) =>
  (await client.execute(`PRAGMA table_info(${table})`)).rows.map((r) => ({ name: r.name, dflt: r.dflt_value }))

// Migration 0041: pages are on for a new panel (no row: the setting's default) and recorded
// "off" for a database in use, so an upgrade pushes the same configuration; logs get request_id.
it('migration 0041 records pages off for a database in use, adds the columns, and its down step takes them out again', async () => {
  const client = freshClient()
  await migrateUp(client, MIGRATIONS, BEFORE)
  await client.execute(
    "INSERT INTO users (email, role, created_at, updated_at) VALUES ('admin@example.test', 'admin', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
  )
  await migrateUp(client, MIGRATIONS, 41)
  expect(await pagesRow(client)).toEqual(['false'])
  expect(await columns(client, 'hosts')).toContainEqual({ name: 'error_pages', dflt: "'inherit'" })
  expect((await columns(client, 'logs')).map((c) => c.name)).toContain('request_id')
  const indexes = await client.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'logs'")
  expect(indexes.rows.map((r) => r.name)).toContain('logs_request_id_idx')

  await migrateDown(client, MIGRATIONS, BEFORE)
  expect(await pagesRow(client)).toEqual([])
  expect((await columns(client, 'hosts')).map((c) => c.name)).not.toContain('error_pages')
  expect((await columns(client, 'logs')).map((c) => c.name)).not.toContain('request_id')
  client.close()
})

it('migration 0041 leaves a new database without a row: the default (on) applies', async () => {
  const client = freshClient()
  await migrateUp(client, MIGRATIONS, 41)
  expect(await pagesRow(client)).toEqual([])
  client.close()
})
