import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { makeTempDir } from '../support/processes'
import { startPanel } from '../support/panel'

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
const backupsDir = () => join(stack.panel.dataDir, 'backups')
const api = (path: string, method = 'GET', body?: unknown) => stack.panel.request(path, { method, cookie: stack.admin, body })

beforeAll(async () => {
  up = await startTestUpstream()
  stack = await startProxyStack()
})
afterAll(async () => {
  await stack?.stop()
  await up?.stop()
})

describe('backups', () => {
  it('takes a consistent, compressed snapshot with a checksum', async () => {
    const res = await api('/api/backups', 'POST')
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      kind: 'manual',
      status: 'ok',
      size_bytes: expect.any(Number),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    })
    const download = await fetch(`${stack.panel.url}/api/backups/${res.json.id}/download`, { headers: { cookie: stack.admin } })
    const bytes = Buffer.from(await download.arrayBuffer())
    expect(gunzipSync(bytes).subarray(0, 15).toString()).toBe('SQLite format 3')
    expect((await api('/api/backups')).json.map((b: any) => b.id)).toContain(res.json.id)
    expect((await api('/api/system/health')).json.scheduler).toEqual({ last_backup_at: res.json.created_at, last_backup_status: 'ok' })
    expect((await api('/api/dashboard/health')).json.backups.last_backup_status).toBe('ok')
  })

  it('restore brings back a deleted host, and the proxy configuration follows', async () => {
    const group = await createGroup(stack, { name: 'g', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const host = (await createHost(stack, { domain: 'kept.example.test', target_group_id: group.id })).json
    const backup = (await api('/api/backups', 'POST')).json
    expect((await api(`/api/hosts/${host.id}`, 'DELETE')).status).toBe(204)
    expect((await httpRequest({ port: stack.httpPort, host: 'kept.example.test' })).body).not.toContain('upstream')

    const res = await api(`/api/backups/${backup.id}/restore`, 'POST')
    expect(res.status).toBe(200)
    expect(res.json.reconcile.status).toBe('applied')
    stack.admin = await stack.panel.login() // sessions are those of the snapshot now
    expect((await api(`/api/hosts/${host.id}`)).json.domain).toBe('kept.example.test')
    const served = await eventually(
      () => httpRequest({ port: stack.httpPort, host: 'kept.example.test' }),
      (r) => r.status === 200,
      10_000,
    )
    expect(JSON.parse(served.body).upstream).toBe(up.port)
    // Backups taken after the snapshot are still listed: their metadata is not in the database.
    expect((await api('/api/backups')).json.length).toBeGreaterThanOrEqual(2)
  })

  it('refuses a corrupted backup and a missing one, changing nothing', async () => {
    const backup = (await api('/api/backups', 'POST')).json
    const file = join(backupsDir(), backup.file_name)
    const bytes = readFileSync(file)
    bytes[bytes.length - 20] ^= 0xff
    writeFileSync(file, bytes)
    const hostsBefore = (await api('/api/hosts')).json
    const res = await api(`/api/backups/${backup.id}/restore`, 'POST')
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/checksum|corrupted/)
    expect((await api('/api/hosts')).json).toEqual(hostsBefore)
    expect((await api('/api/backups/12345/restore', 'POST')).status).toBe(404)
    expect((await api(`/api/backups/${backup.id}`, 'DELETE')).status).toBe(204)
    expect(readdirSync(backupsDir()).some((f) => f === backup.file_name)).toBe(false)
  })

  it('runs on schedule at a time the test controls, and expires backups past retention', async () => {
    const before = (await api('/api/backups')).json.length
    // Mark an existing backup as 30 days old so the retention of the scheduled run removes it.
    const old = (await api('/api/backups')).json.at(-1)
    const sidecar = join(backupsDir(), `backup-${old.id}.json`)
    writeFileSync(
      sidecar,
      JSON.stringify({ ...JSON.parse(readFileSync(sidecar, 'utf8')), created_at: new Date(Date.now() - 30 * 86_400_000).toISOString() }),
    )
    expect((await api('/api/settings', 'PUT', { 'backup.schedule': '*/3 * * * * *', 'backup.retention_days': 7 })).status).toBe(200)
    const scheduled = await eventually(
      () => api('/api/backups'),
      (r) => r.json.some((b: any) => b.kind === 'scheduled'),
      20_000,
      500,
    )
    expect(scheduled.json.find((b: any) => b.kind === 'scheduled').status).toBe('ok')
    expect(scheduled.json.some((b: any) => b.id === old.id)).toBe(false)
    await api('/api/settings', 'PUT', { 'backup.schedule': '0 2 * * *' })
    expect(before).toBeGreaterThan(0)
  })

  it('a failing backup answers 500 with the reason, and writes a backup_failed audit row', async () => {
    // Failure injection: a plain file where the backups folder should be.
    const dataDir = makeTempDir('panel-backup-fail-')
    writeFileSync(join(dataDir, 'backups'), 'not a folder')
    const panel = await startPanel({ dataDir })
    try {
      const cookie = await panel.login()
      const bad = await panel.request('/api/backups', { method: 'POST', cookie })
      expect(bad.status).toBe(500)
      expect(bad.json.error).toMatch(/^backup failed: .*(EEXIST|ENOTDIR)/)
      const audit = await panel.db().execute("SELECT raw FROM logs WHERE message = 'backup_failed'")
      expect(audit.rows).toHaveLength(1)
    } finally {
      await panel.stop()
    }
  })
})
