import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { expect, it } from 'vitest'
import { migrateUp, readMigrationsFromDir } from '../../server/utils/core/migrations'
import { rollupStatements } from '../../server/utils/logs/rollup'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))

// Upgrading a database whose logs were rolled up before migration 0022: the
// status/method/level roll-ups and the path index start with exactly the rows
// below the roll-up mark, and hold what the roll-up loop itself would have made
// of them (the migration spells out rollup.ts's SQL expressions).
it('migration 0022 back-fills the new roll-ups and the path index with the rows below the mark, as the loop does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mig-'))
  const client = createClient({ url: `file:${join(dir, 'db.sqlite')}` })
  await migrateUp(client, MIGRATIONS, 21)
  const rows: Array<[number, number | null, string | null, string | null, number | null]> = [
    [7_200_001, 200, 'GET', '/a/b?x=1', 0.2],
    [7_200_002, 200, 'GET', '/a/b?x=2', 13.2],
    [7_300_000, 404, 'POST', '/Ünï"q', 1234.567],
    [10_900_000, null, null, null, null],
    [10_900_001, 500, 'GET', '/a/b', 30_000],
    [10_900_002, 500, 'GET', '/late', 1], // the last one: above the mark
  ]
  for (const [ts, status, method, path, duration] of rows) {
    await client.execute({
      sql: "INSERT INTO logs (ts_ms, source, host_id, host_domain, status, method, path, level, duration_ms) VALUES (?, 'caddy_access', 3, 'c.example.test', ?, ?, ?, 'info', ?)",
      args: [ts, status, method, path, duration],
    })
  }
  await client.execute('UPDATE logs_rollup_state SET last_id = 5')
  await migrateUp(client, MIGRATIONS)
  const tables = ['logs_hourly_status_durations', 'logs_hourly_status_paths']
  const read = async () =>
    Object.fromEntries(
      await Promise.all(
        tables.map(async (t) => [
          t,
          (await client.execute(`SELECT * FROM ${t} ORDER BY 1, 2, 3, 4, 5, 6, 7, 8`)).rows.map((r) => ({ ...r })),
        ]),
      ),
    )
  const indexed = async () =>
    (
      await client.execute(
        'SELECT rowid FROM logs_path_fts WHERE logs_path_fts MATCH \'"a/b"\' OR logs_path_fts MATCH \'"Ünï"\' OR logs_path_fts MATCH \'"ate"\' ORDER BY rowid',
      )
    ).rows.map((r) => Number(r.rowid))
  const migrated = await read()
  expect(migrated.logs_hourly_status_paths).toContainEqual({
    hour_ms: 7_200_000,
    source: 'caddy_access',
    host_id: 3,
    host_domain: 'c.example.test',
    status: 200,
    method: 'GET',
    level: 'info',
    path: '/a/b',
    n: 2,
  })
  expect(migrated.logs_hourly_status_durations).toContainEqual({
    hour_ms: 7_200_000,
    source: 'caddy_access',
    host_id: 3,
    host_domain: 'c.example.test',
    status: 404,
    method: 'POST',
    level: 'info',
    bucket_us: 1_240_000,
    n: 1,
  })
  expect(await indexed()).toEqual([1, 2, 3, 5])

  // The loop's own statements over the same rows give the same tables.
  for (const t of [...tables, 'logs_path_fts']) await client.execute(`DELETE FROM ${t}`)
  await client.batch(
    rollupStatements('id <= ?', [5], 1).filter((st) => typeof st !== 'string' && /logs_hourly_status|logs_path_fts/.test(st.sql)),
    'write',
  )
  expect(await read()).toEqual(migrated)
  expect(await indexed()).toEqual([1, 2, 3, 5])

  // The row above the mark comes with the next run; retention takes rows out of the index too.
  await client.batch(rollupStatements('id > ? AND id <= ?', [5, 6], 1), 'write')
  expect(await indexed()).toEqual([1, 2, 3, 5, 6])
  await client.batch(rollupStatements('id IN (1, 6)', [], -1), 'write')
  expect(await indexed()).toEqual([2, 3, 5])
  client.close()
  rmSync(dir, { recursive: true, force: true })
})

// Migration 0028 adds the paths by status, method and level over every host; it is filled from the
// per-host table, and must hold what the loop itself writes for the same rows.
it('migration 0028 fills the paths by status from the per-host roll-up, as the loop does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mig-'))
  const client = createClient({ url: `file:${join(dir, 'db.sqlite')}` })
  await migrateUp(client, MIGRATIONS, 27)
  const rows: Array<[number, number, string, number | null, string | null, string | null]> = [
    [7_200_001, 1, 'a.example.test', 200, 'GET', '/a/b?x=1'],
    [7_200_002, 2, 'b.example.test', 200, 'GET', '/a/b?x=2'],
    [7_300_000, 2, 'b.example.test', 404, 'POST', '/Ünï"q'],
    [10_900_000, 1, 'a.example.test', null, null, null],
    [10_900_001, 1, 'a.example.test', 500, null, '/a/b'],
    [10_900_002, 3, 'c.example.test', 500, 'GET', '/late'], // above the mark
  ]
  for (const [ts, host, domain, status, method, path] of rows)
    await client.execute({
      sql: "INSERT INTO logs (ts_ms, source, host_id, host_domain, status, method, path, level) VALUES (?, 'caddy_access', ?, ?, ?, ?, ?, 'info')",
      args: [ts, host, domain, status, method, path],
    })
  // The loop as it was before 0028: every statement but the new table's.
  const before = rollupStatements('id <= ?', [5], 1).filter(
    (st) => typeof st === 'string' || !/logs_hourly_paths_by_status|logs_hourly_path_durations|logs_hourly_queries/.test(st.sql),
  )
  await client.batch([...before, 'UPDATE logs_rollup_state SET last_id = 5'], 'write')
  await migrateUp(client, MIGRATIONS)
  const read = async () =>
    (await client.execute('SELECT * FROM logs_hourly_paths_by_status ORDER BY 1, 2, 3, 4, 5, 6')).rows.map((r) => ({ ...r }))
  const migrated = await read()
  expect(migrated).toEqual([
    { hour_ms: 7_200_000, source: 'caddy_access', status: 200, method: 'GET', level: 'info', path: '/a/b', n: 2 },
    { hour_ms: 7_200_000, source: 'caddy_access', status: 404, method: 'POST', level: 'info', path: '/Ünï"q', n: 1 },
    { hour_ms: 10_800_000, source: 'caddy_access', status: 500, method: '', level: 'info', path: '/a/b', n: 1 },
  ])
  await client.execute('DELETE FROM logs_hourly_paths_by_status')
  await client.batch(
    rollupStatements('id <= ?', [5], 1).filter((st) => typeof st !== 'string' && /logs_hourly_paths_by_status/.test(st.sql)),
    'write',
  )
  expect(await read()).toEqual(migrated)
  client.close()
  rmSync(dir, { recursive: true, force: true })
})

// Migration 0030 adds the durations per path and the query strings seen per hour, back-filled from the
// rows below the mark with rollup.ts's expressions spelled out: they must hold what the loop writes.
it('migration 0030 back-fills the durations per path and the query strings from the rows below the mark, as the loop does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mig-'))
  const client = createClient({ url: `file:${join(dir, 'db.sqlite')}` })
  await migrateUp(client, MIGRATIONS, 29)
  const rows: Array<[number, string, string | null, number | null]> = [
    [7_200_001, 'caddy_access', '/a/b?x=1', 0.2],
    [7_200_002, 'caddy_access', '/a/b?x=1', 13.2],
    [7_200_003, 'waf_audit', '/a/b?x=2&y=?', 13.24],
    [7_300_000, 'caddy_access', '/Ünï"q', 1234.567],
    [7_300_001, 'caddy_access', '/Ünï"q', null],
    [10_900_000, 'caddy_access', null, 5],
    [10_900_001, 'caddy_access', '/a/b?', 30_000],
    [10_900_002, 'caddy_access', '/late?z', 1], // above the mark
  ]
  for (const [ts, source, path, duration] of rows)
    await client.execute({
      sql: "INSERT INTO logs (ts_ms, source, host_id, host_domain, status, method, path, level, duration_ms) VALUES (?, ?, 1, 'a.example.test', 200, 'GET', ?, 'info', ?)",
      args: [ts, source, path, duration],
    })
  const added = /logs_hourly_path_durations|logs_hourly_queries/
  const before = rollupStatements('id <= ?', [7], 1).filter((st) => typeof st === 'string' || !added.test(st.sql))
  await client.batch([...before, 'UPDATE logs_rollup_state SET last_id = 7'], 'write')
  await migrateUp(client, MIGRATIONS)
  const read = async () => ({
    durations: (await client.execute('SELECT * FROM logs_hourly_path_durations ORDER BY 1, 2, 3, 4')).rows.map((r) => ({ ...r })),
    queries: (await client.execute('SELECT * FROM logs_hourly_queries ORDER BY 1, 2, 3')).rows.map((r) => ({ ...r })),
  })
  const migrated = await read()
  expect(migrated).toEqual({
    durations: [
      { hour_ms: 7_200_000, source: 'caddy_access', path: '/a/b', bucket_us: 200, n: 1, dur_sum_us: 200 },
      { hour_ms: 7_200_000, source: 'caddy_access', path: '/a/b', bucket_us: 13_200, n: 1, dur_sum_us: 13_200 },
      { hour_ms: 7_200_000, source: 'caddy_access', path: '/Ünï"q', bucket_us: 1_240_000, n: 1, dur_sum_us: 1_234_567 },
      { hour_ms: 7_200_000, source: 'waf_audit', path: '/a/b', bucket_us: 13_300, n: 1, dur_sum_us: 13_240 },
      { hour_ms: 10_800_000, source: 'caddy_access', path: '/a/b', bucket_us: 30_000_000, n: 1, dur_sum_us: 30_000_000 },
    ],
    queries: [
      { hour_ms: 7_200_000, source: 'caddy_access', query: 'x=1', n: 2 },
      { hour_ms: 7_200_000, source: 'waf_audit', query: 'x=2&y=?', n: 1 },
      { hour_ms: 10_800_000, source: 'caddy_access', query: '', n: 1 },
    ],
  })
  await client.batch(['DELETE FROM logs_hourly_path_durations', 'DELETE FROM logs_hourly_queries'], 'write')
  await client.batch(
    rollupStatements('id <= ?', [7], 1).filter((st) => typeof st !== 'string' && added.test(st.sql)),
    'write',
  )
  expect(await read()).toEqual(migrated)
  client.close()
  rmSync(dir, { recursive: true, force: true })
})
