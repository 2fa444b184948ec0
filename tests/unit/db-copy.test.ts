import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { describe, expect, it } from 'vitest'
import { migrateUp, readMigrationsFromDir, currentVersion } from '../../server/utils/core/migrations'
import { REPO_ROOT } from '../support/build'

// scripts/db-copy.mjs (docs/deployment.md, "Moving the database"): a real panel
// schema with rows, copied file to file through the same libSQL client API the
// copy to a libSQL server uses.

const MIGRATIONS = readMigrationsFromDir(join(REPO_ROOT, 'db/migrations'))
const SCRIPT = join(REPO_ROOT, 'scripts/db-copy.mjs')

describe('scripts/db-copy.mjs', () => {
  it('copies schema, every row and the migration state, and refuses a non-empty target', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'db-copy-'))
    const from = `file:${join(dir, 'from.db')}`,
      to = `file:${join(dir, 'to.db')}`
    const src = createClient({ url: from })
    await migrateUp(src, MIGRATIONS)
    const now = new Date().toISOString()
    await src.execute({
      sql: "INSERT INTO users (email, name, role, provider, password_hash, created_at, updated_at) VALUES (?, 'A', 'admin', 'local', 'x', ?, ?)",
      args: ['a@example.test', now, now],
    })
    for (let i = 0; i < 1234; i++)
      await src.execute({
        sql: "INSERT INTO logs (ts_ms, source, message, path) VALUES (?, 'audit', ?, ?)",
        args: [Date.now() + i, `row ${i}`, i % 3 ? null : `/p/${i}`],
      })
    // The path index (FTS5, migration 0022) as the roll-up loop fills it: its shadow tables are the copy.
    await src.execute('INSERT INTO logs_path_fts (rowid, path) SELECT id, path FROM logs WHERE path IS NOT NULL')
    const pathHits = async (c: typeof src) =>
      (await c.execute(`SELECT rowid FROM logs_path_fts WHERE logs_path_fts MATCH '"/12"' ORDER BY rowid`)).rows.map((r) => Number(r.rowid))
    const hitsBefore = await pathHits(src)
    expect(hitsBefore.length).toBeGreaterThan(3)
    src.close()

    const out = execFileSync(process.execPath, [SCRIPT, '--from', from, '--to', to], { encoding: 'utf8' })
    expect(out).toMatch(/row counts match/)
    const dst = createClient({ url: to })
    expect(await currentVersion(dst)).toBe(MIGRATIONS.at(-1)!.version)
    expect(Number((await dst.execute('SELECT count(*) AS n FROM logs')).rows[0]!.n)).toBe(1234)
    expect((await dst.execute('SELECT email FROM users')).rows.map((r) => r.email)).toEqual(['a@example.test'])
    expect(await pathHits(dst)).toEqual(hitsBefore)
    const indexes = async (c: typeof dst) =>
      (await c.execute("SELECT name FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name")).rows.map(
        (r) => r.name,
      )
    const again = createClient({ url: from })
    expect(await indexes(dst)).toEqual(await indexes(again))
    again.close()
    dst.close()

    const twice = spawnSync(process.execPath, [SCRIPT, '--from', from, '--to', to], { encoding: 'utf8' })
    expect(twice.status).toBe(1)
    expect(twice.stderr).toMatch(/already has tables/)
  })
})
