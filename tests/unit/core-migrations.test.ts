import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { describe, expect, it } from 'vitest'
import { currentVersion, migrateDown, migrateUp, parseMigrationFiles, readMigrationsFromDir } from '../../server/utils/core/migrations'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))

async function tables(client: ReturnType<typeof createClient>) {
  const r = await client.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
  return r.rows.map((row) => String(row.name))
}

describe('migrations — every migration goes up, down to zero and up again', () => {
  it('round-trips the whole chain on a real libSQL file', async () => {
    const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
    expect(MIGRATIONS.length).toBeGreaterThan(0)
    await migrateUp(client, MIGRATIONS)
    const latest = MIGRATIONS.at(-1)!.version
    expect(await currentVersion(client)).toBe(latest)
    const full = await tables(client)
    expect(full).toContain('users')
    expect(full).toContain('logs')
    // Step down one at a time so every down file runs against its own up state.
    // Numbers may have gaps (each branch owns its numbers): step to the previous one that exists.
    for (let i = MIGRATIONS.length - 1; i >= 0; i--) {
      const below = MIGRATIONS[i - 1]?.version ?? 0
      await migrateDown(client, MIGRATIONS, below)
      expect(await currentVersion(client)).toBe(below)
    }
    expect(await tables(client)).toEqual(['schema_migrations'])
    await migrateUp(client, MIGRATIONS)
    expect(await tables(client)).toEqual(full)
    client.close()
  })

  it('0027 redacts the credentials WAF audit rows stored before it, and leaves other rows alone', async () => {
    const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
    await migrateUp(
      client,
      MIGRATIONS.filter((m) => m.version < 27),
    )
    const line = (headers: Record<string, string[]>) =>
      JSON.stringify({
        transaction: { request: { headers: { host: ['a.example.test'], ...headers } }, response: { headers: { 'set-cookie': ['s=1'] } } },
      })
    const rows: Array<[string, string]> = [
      ['waf_audit', line({ cookie: ['panel_session=tok'], authorization: ['Basic eA=='] })],
      ['waf_audit', line({ Cookie: ['x=1'] })],
      ['waf_audit', '{"transaction": cut'],
      ['caddy_access', line({ cookie: ['kept-as-is'] })],
    ]
    for (const [source, raw] of rows)
      await client.execute({ sql: 'INSERT INTO logs (ts_ms, source, raw) VALUES (0, ?, ?)', args: [source, raw] })
    await migrateUp(client, MIGRATIONS)
    const after = (await client.execute('SELECT raw FROM logs ORDER BY id')).rows.map((r) => String(r.raw))
    const headersOf = (raw: string) => JSON.parse(raw).transaction
    expect(headersOf(after[0]!).request.headers).toEqual({ host: ['a.example.test'], cookie: ['REDACTED'], authorization: ['REDACTED'] })
    expect(headersOf(after[0]!).response.headers).toEqual({ 'set-cookie': ['REDACTED'] })
    expect(headersOf(after[1]!).request.headers.Cookie).toEqual(['REDACTED'])
    expect(after[2]).toBe(rows[2]![1])
    expect(after[3]).toBe(rows[3]![1])
    client.close()
  })

  it('leaves no partial schema when a migration fails', async () => {
    const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
    const broken = parseMigrationFiles({
      '0001_a.up.sql': 'CREATE TABLE a (id INTEGER);',
      '0001_a.down.sql': 'DROP TABLE a;',
      '0002_b.up.sql': 'CREATE TABLE b (id INTEGER); CREATE TABLE a (id INTEGER);',
      '0002_b.down.sql': 'DROP TABLE b;',
    })
    await expect(migrateUp(client, broken)).rejects.toThrow(/migration 2 \(b\) up failed: .*already exists/)
    expect(await currentVersion(client)).toBe(1)
    expect(await tables(client)).toEqual(['a', 'schema_migrations'])
    client.close()
  })

  it('insists on a down file for every up file', () => {
    expect(() => parseMigrationFiles({ '0001_a.up.sql': 'select 1' })).toThrow(/needs both/)
  })
})
