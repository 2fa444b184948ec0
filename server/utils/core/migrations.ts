import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Client } from '@libsql/client'

// Numbered migrations, each an up and a down SQL file, applied one transaction
// each. Relative imports only: scripts/db-migrate.mjs loads this file directly.

export interface Migration {
  version: number
  name: string
  up: string
  down: string
}

const _FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.(up|down)\.sql$/

/** Pairs `NNNN_name.up.sql` / `NNNN_name.down.sql` contents into ordered migrations. */
export function parseMigrationFiles(files: Record<string, string>): Migration[] {
  const byVersion = new Map<number, Partial<Migration>>()
  for (const [fileName, sql] of Object.entries(files)) {
    const base = fileName.split(/[/:]/).pop()!
    const m = _FILE_NAME.exec(base)
    if (!m) continue
    const version = Number(m[1])
    const entry = byVersion.get(version) ?? { version, name: m[2] }
    if (entry.name !== m[2]) throw new Error(`migration ${m[1]} has two names: ${entry.name} and ${m[2]}`)
    entry[m[3] as 'up' | 'down'] = sql
    byVersion.set(version, entry)
  }
  const list = [...byVersion.values()].sort((a, b) => a.version! - b.version!)
  for (const m of list) {
    if (m.up === undefined || m.down === undefined)
      throw new Error(`migration ${String(m.version).padStart(4, '0')}_${m.name} needs both an .up.sql and a .down.sql file`)
  }
  return list as Migration[]
}

export function readMigrationsFromDir(dir: string): Migration[] {
  const files: Record<string, string> = {}
  for (const f of readdirSync(dir)) if (f.endsWith('.sql')) files[f] = readFileSync(join(dir, f), 'utf8')
  return parseMigrationFiles(files)
}

async function _ensureTable(client: Client): Promise<void> {
  await client.execute(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`)
}

export async function currentVersion(client: Client): Promise<number> {
  await _ensureTable(client)
  const r = await client.execute('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations')
  return Number(r.rows[0]!.v)
}

export async function migrationStatus(client: Client, migrations: Migration[]) {
  const current = await currentVersion(client)
  return {
    current,
    latest: migrations.at(-1)?.version ?? 0,
    migrations: migrations.map((m) => ({ version: m.version, name: m.name, applied: m.version <= current })),
  }
}

async function _apply(client: Client, sql: string, bookkeeping: { sql: string; args: (string | number)[] }, label: string) {
  const tx = await client.transaction('write')
  try {
    await tx.executeMultiple(sql)
    await tx.execute(bookkeeping)
    await tx.commit()
  } catch (err) {
    await tx.rollback().catch(() => {})
    throw new Error(`migration ${label} failed: ${(err as Error).message}`)
  } finally {
    tx.close()
  }
}

/** Applies every migration above the current version up to `target` (default: all). */
export async function migrateUp(client: Client, migrations: Migration[], target = Infinity): Promise<number[]> {
  const current = await currentVersion(client)
  const applied: number[] = []
  for (const m of migrations) {
    if (m.version <= current || m.version > target) continue
    await _apply(
      client,
      m.up,
      {
        sql: 'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
        args: [m.version, m.name, new Date().toISOString()],
      },
      `${m.version} (${m.name}) up`,
    )
    applied.push(m.version)
  }
  return applied
}

/** Reverts migrations above `target`, newest first (target 0 empties the schema). */
export async function migrateDown(client: Client, migrations: Migration[], target: number): Promise<number[]> {
  const current = await currentVersion(client)
  const reverted: number[] = []
  for (const m of [...migrations].reverse()) {
    if (m.version > current || m.version <= target) continue
    await _apply(
      client,
      m.down,
      { sql: 'DELETE FROM schema_migrations WHERE version = ?', args: [m.version] },
      `${m.version} (${m.name}) down`,
    )
    reverted.push(m.version)
  }
  return reverted
}
