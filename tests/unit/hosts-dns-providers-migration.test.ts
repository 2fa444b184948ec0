import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { expect, it } from 'vitest'
import { migrateDown, migrateUp, readMigrationsFromDir } from '../../server/utils/core/migrations'

const MIGRATIONS = readMigrationsFromDir(fileURLToPath(new URL('../../db/migrations', import.meta.url)))
const BEFORE = MIGRATIONS.filter((m) => m.version < 16).at(-1)!.version

// Migration 0016 widens the CHECK on dns_providers.name (a table rebuild): the
// stored providers survive both ways, provider_c is accepted only above it.
it('migration 0016 accepts provider_c, keeps provider_a/provider_b rows, and its down step drops provider_c only', async () => {
  const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
  await migrateUp(client, MIGRATIONS, BEFORE)
  const insert = (name: string) =>
    client.execute({
      sql: 'INSERT INTO dns_providers (name, enabled, credentials, updated_at) VALUES (?, 1, ?, ?)',
      args: [name, `sealed-${name}`, '2026-01-01T00:00:00Z'],
    })
  await insert('provider_a')
  await client.execute({
    sql: "INSERT INTO dns_providers (name, enabled, credentials, updated_at) VALUES ('provider_b', 0, NULL, 'x')",
    args: [],
  })
  await expect(insert('provider_c')).rejects.toThrow(/CHECK constraint failed/)

  await migrateUp(client, MIGRATIONS, 16)
  await insert('provider_c')
  await expect(insert('provider_z')).rejects.toThrow(/CHECK constraint failed/)
  const rows = async () =>
    (await client.execute('SELECT name, enabled, credentials FROM dns_providers ORDER BY name')).rows.map((r) => ({ ...r }))
  expect(await rows()).toEqual([
    { name: 'provider_a', enabled: 1, credentials: 'sealed-provider_a' },
    { name: 'provider_b', enabled: 0, credentials: null },
    { name: 'provider_c', enabled: 1, credentials: 'sealed-provider_c' },
  ])

  await migrateDown(client, MIGRATIONS, BEFORE)
  expect(await rows()).toEqual([
    { name: 'provider_a', enabled: 1, credentials: 'sealed-provider_a' },
    { name: 'provider_b', enabled: 0, credentials: null },
  ])
  await expect(insert('provider_c')).rejects.toThrow(/CHECK constraint failed/)
  client.close()
})

// Migration 0045 widens it again for the vendor providers (issue 39): their rows
// are accepted only above it, and its down step drops them and keeps the rest.
it('migration 0045 accepts the vendor providers, keeps the earlier rows, and its down step drops the vendors only', async () => {
  const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
  const before45 = MIGRATIONS.filter((m) => m.version < 45).at(-1)!.version
  await migrateUp(client, MIGRATIONS, before45)
  const insert = (name: string) =>
    client.execute({
      sql: 'INSERT INTO dns_providers (name, enabled, credentials, updated_at) VALUES (?, 1, ?, ?)',
      args: [name, `sealed-${name}`, '2026-01-01T00:00:00Z'],
    })
  await insert('provider_c')
  await expect(insert('hetzner')).rejects.toThrow(/CHECK constraint failed/)

  await migrateUp(client, MIGRATIONS, 45)
  for (const name of ['hetzner', 'acmedns', 'powerdns']) await insert(name)
  await expect(insert('provider_z')).rejects.toThrow(/CHECK constraint failed/)
  const rows = async () => (await client.execute('SELECT name FROM dns_providers ORDER BY name')).rows.map((r) => r.name)
  expect(await rows()).toEqual(['acmedns', 'hetzner', 'powerdns', 'provider_c'])

  await migrateDown(client, MIGRATIONS, before45)
  expect(await rows()).toEqual(['provider_c'])
  await expect(insert('hetzner')).rejects.toThrow(/CHECK constraint failed/)
  client.close()
})

// Migration 0047 widens it for four more vendors (ClouDNS, Loopia, Huawei Cloud DNS,
// LuaDNS): accepted only above it; its down step drops their rows and keeps 0045's.
it('migration 0047 accepts cloudns, loopia, huaweicloud and luadns, and its down step drops only them', async () => {
  const client = createClient({ url: `file:${join(mkdtempSync(join(tmpdir(), 'mig-')), 'db.sqlite')}` })
  const before47 = MIGRATIONS.filter((m) => m.version < 47).at(-1)!.version
  expect(before47).toBeGreaterThanOrEqual(45)
  await migrateUp(client, MIGRATIONS, before47)
  const insert = (name: string) =>
    client.execute({
      sql: 'INSERT INTO dns_providers (name, enabled, credentials, updated_at) VALUES (?, 1, ?, ?)',
      args: [name, `sealed-${name}`, '2026-01-01T00:00:00Z'],
    })
  await insert('provider_a')
  await insert('acmedns')
  for (const name of ['cloudns', 'loopia', 'huaweicloud', 'luadns']) await expect(insert(name)).rejects.toThrow(/CHECK constraint failed/)

  await migrateUp(client, MIGRATIONS, 47)
  for (const name of ['cloudns', 'loopia', 'huaweicloud', 'luadns']) await insert(name)
  await expect(insert('provider_z')).rejects.toThrow(/CHECK constraint failed/)
  const rows = async () =>
    (await client.execute('SELECT name, credentials FROM dns_providers ORDER BY name')).rows.map((r) => `${r.name}:${r.credentials}`)
  expect(await rows()).toEqual([
    'acmedns:sealed-acmedns',
    'cloudns:sealed-cloudns',
    'huaweicloud:sealed-huaweicloud',
    'loopia:sealed-loopia',
    'luadns:sealed-luadns',
    'provider_a:sealed-provider_a',
  ])

  await migrateDown(client, MIGRATIONS, before47)
  expect(await rows()).toEqual(['acmedns:sealed-acmedns', 'provider_a:sealed-provider_a'])
  await expect(insert('luadns')).rejects.toThrow(/CHECK constraint failed/)
  client.close()
})
