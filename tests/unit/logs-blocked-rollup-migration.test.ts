import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { expect, it } from 'vitest'
import { migrateUp, readMigrationsFromDir } from '../../server/utils/core/migrations'
import { rollupStatements } from '../../server/utils/logs/rollup'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))

// Upgrading a database whose logs were rolled up before migration 0011: the
// blocked-requests roll-up starts with exactly the rows already below the mark,
// so that later roll-up runs (rows above the mark) neither miss nor double-count.
it('migration 0011 back-fills the blocked roll-up with the rows below the roll-up mark', async () => {
  const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
  await migrateUp(client, MIGRATIONS, 9)
  const rows: Array<[string, number | null, string | null, string | null]> = [
    ['caddy_access', 403, '198.51.100.1', 'XX'],
    ['caddy_access', 403, '198.51.100.1', 'XX'],
    ['caddy_access', 429, null, null],
    ['caddy_access', 200, '198.51.100.1', 'XX'],
    ['waf_audit', 403, '198.51.100.2', 'YY'],
    ['waf_audit', null, '198.51.100.2', 'YY'],
    ['caddy_access', 403, '198.51.100.9', 'ZZ'], // above the mark: not rolled up yet
  ]
  for (const [source, status, ip, country] of rows) {
    await client.execute({
      sql: 'INSERT INTO logs (ts_ms, source, host_id, status, remote_ip, country) VALUES (?, ?, 3, ?, ?, ?)',
      args: [7_200_001, source, status, ip, country],
    })
  }
  await client.execute('UPDATE logs_rollup_state SET last_id = 6')
  await migrateUp(client, MIGRATIONS)
  const read = async () =>
    (
      await client.execute(
        'SELECT hour_ms, source, host_id, status, remote_ip, country, n FROM logs_hourly_blocked ORDER BY source, status, remote_ip',
      )
    ).rows.map((r) => ({ ...r }))
  expect(await read()).toEqual([
    { hour_ms: 7_200_000, source: 'caddy_access', host_id: 3, status: 403, remote_ip: '198.51.100.1', country: 'XX', n: 2 },
    { hour_ms: 7_200_000, source: 'caddy_access', host_id: 3, status: 429, remote_ip: '', country: '', n: 1 },
    { hour_ms: 7_200_000, source: 'waf_audit', host_id: 3, status: 403, remote_ip: '198.51.100.2', country: 'YY', n: 1 },
  ])
  // The next roll-up run adds the row above the mark; retention subtracts what it deletes.
  await client.batch(rollupStatements('id > ? AND id <= ?', [6, 7], 1), 'write')
  expect((await read()).find((r) => r.remote_ip === '198.51.100.9')).toMatchObject({ n: 1 })
  await client.batch(rollupStatements('id IN (1, 2)', [], -1), 'write')
  expect((await read()).find((r) => r.remote_ip === '198.51.100.1')).toMatchObject({ n: 0 })
  client.close()
})
