import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { startTestUpstream } from '../support/upstream'
import { eventually, httpRequest } from '../support/http'
import { createGroup, createHost, startProxyStack, type ProxyStack } from '../support/proxy-stack'
import { makeTempDir } from '../support/processes'
import { registerTestSecret, startPanel } from '../support/panel'
import { createClient } from '@libsql/client'
import { sessionApi } from '../support/api-client'

let stack: ProxyStack
let up: Awaited<ReturnType<typeof startTestUpstream>>
const backupsDir = () => join(stack.panel.dataDir, 'backups')
const api = sessionApi(() => ({ panel: stack.panel, cookie: stack.admin }))
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` })

const VIEWER = { email: 'viewer.backups@example.test', password: 'viewer-backups-password-1' }
const GONE = { email: 'gone.backups@example.test', password: 'gone-backups-password-1' }
const DEMOTED = { email: 'demoted.backups@example.test', password: 'demoted-backups-password-1' }
const RESET = { email: 'reset.backups@example.test', password: 'reset-backups-password-1', newPassword: 'reset-backups-password-2' }
registerTestSecret(VIEWER.password, GONE.password, DEMOTED.password, RESET.password, RESET.newPassword)

async function makeUser(u: { email: string; password: string }, role: 'admin' | 'viewer'): Promise<number> {
  const res = await api('/api/users', 'POST', { ...u, role })
  expect(res.status, res.text).toBe(201)
  return res.json.id
}

async function makeToken(cookie: string, name: string, scope: 'read' | 'admin') {
  const res = await stack.panel.request('/api/tokens', { method: 'POST', cookie, body: { name, scope } })
  expect(res.status, res.text).toBe(201)
  registerTestSecret(res.json.secret)
  return res.json as { token: { id: number; name: string }; secret: string }
}

/** The panel's database as it is now: a restore renames another file into place, so the handle's client would read the old one. */
function freshDb() {
  return createClient({ url: `file:${join(stack.panel.dataDir, 'panel.db')}`, timeout: 5000 })
}

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

describe('backups are for admins only (issue 33)', () => {
  it('a viewer and a read token can neither list, download nor restore one; an admin token can, and each download is audited', async () => {
    const backup = (await api('/api/backups', 'POST')).json
    await makeUser(VIEWER, 'viewer')
    const viewer = await stack.panel.login(VIEWER.email, VIEWER.password)
    const read = await makeToken(stack.admin, 'backups read', 'read')
    const auditBefore = await stack.panel
      .db()
      .execute("SELECT count(*) AS n FROM logs WHERE source = 'audit' AND message = 'backup_download'")
    for (const who of [{ cookie: viewer }, { headers: bearer(read.secret) }]) {
      for (const [method, path] of [
        ['GET', '/api/backups'],
        ['GET', `/api/backups/${backup.id}/download`],
        ['POST', `/api/backups/${backup.id}/restore`],
        ['POST', '/api/backups/restore'],
        ['POST', '/api/backups'],
        ['DELETE', `/api/backups/${backup.id}`],
      ] as const) {
        const res = await stack.panel.request(path, { method, ...who })
        expect(res.status, `${method} ${path}`).toBe(403)
        expect(res.json.error).toBeTruthy()
        expect(res.text).not.toContain('SQLite format')
      }
    }
    const auditAfter = await stack.panel
      .db()
      .execute("SELECT count(*) AS n FROM logs WHERE source = 'audit' AND message = 'backup_download'")
    expect(auditAfter.rows[0]!.n).toBe(auditBefore.rows[0]!.n)
    expect((await api('/api/backups')).json.map((b: any) => b.id)).toContain(backup.id)

    const adminToken = await makeToken(stack.admin, 'backups admin', 'admin')
    const download = await fetch(`${stack.panel.url}/api/backups/${backup.id}/download`, { headers: bearer(adminToken.secret) })
    expect(download.status).toBe(200)
    expect(
      gunzipSync(Buffer.from(await download.arrayBuffer()))
        .subarray(0, 15)
        .toString(),
    ).toBe('SQLite format 3')
    const rows = await stack.panel
      .db()
      .execute("SELECT actor, raw FROM logs WHERE source = 'audit' AND message = 'backup_download' ORDER BY id DESC LIMIT 1")
    expect(String(rows.rows[0]!.actor)).toBe('admin@example.test')
    expect(JSON.parse(String(rows.rows[0]!.raw))).toMatchObject({
      backup_id: backup.id,
      file_name: backup.file_name,
      api_token_id: adminToken.token.id,
    })
  })
})

describe('a restore keeps what was done to credentials since the backup (issue 33)', () => {
  it('revoked and deleted stay so, demoted stays viewer, new passwords stay, every session ends, and the answer and audit say so', async () => {
    const goneId = await makeUser(GONE, 'viewer')
    const demotedId = await makeUser(DEMOTED, 'admin')
    const resetId = await makeUser({ email: RESET.email, password: RESET.password }, 'viewer')
    const viewerSession = await stack.panel.login(GONE.email, GONE.password)
    const revoked = await makeToken(stack.admin, 'revoked since', 'admin')
    const kept = await makeToken(stack.admin, 'still good', 'read')
    const goneToken = await makeToken(viewerSession, 'of a deleted user', 'read')
    const demoted = await makeToken(await stack.panel.login(DEMOTED.email, DEMOTED.password), 'of a demoted admin', 'admin')
    const backup = (await api('/api/backups', 'POST')).json
    expect(backup.status).toBe('ok')

    // After the backup: a revocation, a deletion, a demotion, a password reset, a new token.
    expect((await api(`/api/tokens/${revoked.token.id}`, 'DELETE')).status).toBe(204)
    expect((await api(`/api/users/${goneId}`, 'DELETE')).status).toBe(204)
    expect((await api(`/api/users/${demotedId}`, 'PUT', { email: DEMOTED.email, name: '', role: 'viewer' })).status).toBe(200)
    expect(
      (await api(`/api/users/${resetId}`, 'PUT', { email: RESET.email, name: '', role: 'viewer', password: RESET.newPassword })).status,
    ).toBe(200)
    const later = await makeToken(stack.admin, 'made after the backup', 'read')
    const oldAdmin = stack.admin

    const res = await api(`/api/backups/${backup.id}/restore`, 'POST')
    expect(res.status, res.text).toBe(200)
    const ref = (t: { token: { id: number; name: string } }, email: string) => ({ id: t.token.id, name: t.token.name, user_email: email })
    expect(res.json.kept).toEqual({
      api_tokens_revoked: expect.arrayContaining([ref(revoked, 'admin@example.test'), ref(goneToken, GONE.email)]),
      api_tokens_narrowed: [ref(demoted, DEMOTED.email)],
      users_deleted: [{ id: goneId, email: GONE.email }],
      users_demoted: [{ id: demotedId, email: DEMOTED.email }],
      credentials_changed: [{ id: resetId, email: RESET.email }],
    })
    expect(res.json.kept.api_tokens_revoked).toHaveLength(2)
    expect(res.json.not_in_backup.api_tokens).toContainEqual(ref(later, 'admin@example.test'))
    expect(res.json.sessions_ended).toBeGreaterThanOrEqual(2)
    const db = freshDb()
    onTestFinished(() => db.close())
    // No secret and no hash in the answer.
    const hashes = (await db.execute('SELECT token_hash FROM api_tokens')).rows.map((r) => String(r.token_hash))
    expect(hashes.length).toBeGreaterThan(3)
    for (const h of hashes) expect(res.text).not.toContain(h)
    expect(res.text).not.toMatch(/\$argon2|ept_/)

    // Every session ended, the snapshot's and the caller's.
    expect((await stack.panel.request('/api/hosts', { cookie: oldAdmin })).status).toBe(401)
    expect((await stack.panel.request('/api/hosts', { cookie: viewerSession })).status).toBe(401)
    stack.admin = await stack.panel.login()
    // Tokens: the revoked one and the deleted user's stay dead, the demoted admin's is read, the untouched one works.
    expect((await stack.panel.request('/api/hosts', { headers: bearer(revoked.secret) })).json.error).toMatch(/was revoked/)
    expect((await stack.panel.request('/api/hosts', { headers: bearer(goneToken.secret) })).status).toBe(401)
    expect((await stack.panel.request('/api/hosts', { headers: bearer(later.secret) })).status).toBe(401)
    expect((await stack.panel.request('/api/hosts', { headers: bearer(kept.secret) })).status).toBe(200)
    expect((await stack.panel.request('/api/hosts', { headers: bearer(demoted.secret) })).status).toBe(200)
    const refused = await stack.panel.request('/api/target-groups', {
      method: 'POST',
      headers: bearer(demoted.secret),
      body: { name: 'after-restore', targets: [{ address: '127.0.0.1:9' }] },
    })
    expect(refused.status).toBe(403)
    // Users: the deleted one cannot log in, the demoted one is a viewer, the reset one has the new password only.
    expect((await stack.panel.request('/api/auth/login', { method: 'POST', body: GONE })).status).toBe(401)
    const demotedSession = await stack.panel.login(DEMOTED.email, DEMOTED.password)
    expect((await stack.panel.request('/api/auth/session', { cookie: demotedSession })).json.user.role).toBe('viewer')
    expect(
      (await stack.panel.request('/api/auth/login', { method: 'POST', body: { email: RESET.email, password: RESET.password } })).status,
    ).toBe(401)
    await stack.panel.login(RESET.email, RESET.newPassword)

    const audit = await db.execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'backup_restore' ORDER BY id DESC LIMIT 1")
    const raw = JSON.parse(String(audit.rows[0]!.raw))
    expect(raw).toMatchObject({ backup_id: backup.id, kept: res.json.kept, sessions_ended: res.json.sessions_ended })
    for (const h of hashes) expect(String(audit.rows[0]!.raw)).not.toContain(h)
  })
})

describe('restore from an uploaded backup file (issue 35)', () => {
  const uploadRestore = (bytes: Buffer, name = 'panel-backup.db.gz') => {
    const form = new FormData()
    form.set('backup', new Blob([new Uint8Array(bytes)]), name)
    return stack.panel.request('/api/backups/restore', { method: 'POST', cookie: stack.admin, form })
  }
  /** A downloaded backup, then removed from the panel's list: the upload is the only copy the panel sees. */
  async function downloadedBackup(): Promise<Buffer> {
    const backup = (await api('/api/backups', 'POST')).json
    const res = await fetch(`${stack.panel.url}/api/backups/${backup.id}/download`, { headers: { cookie: stack.admin } })
    const bytes = Buffer.from(await res.arrayBuffer())
    expect((await api(`/api/backups/${backup.id}`, 'DELETE')).status).toBe(204)
    return bytes
  }
  const restoreRows = async () => {
    const db = freshDb()
    onTestFinished(() => db.close())
    return (await db.execute("SELECT raw FROM logs WHERE source = 'audit' AND message = 'backup_restore' ORDER BY id")).rows
  }

  it('garbage, a cut-off gzip, a non-panel database and a newer-schema file are refused with what to do, changing nothing', async () => {
    const good = await downloadedBackup()
    const group = await createGroup(stack, { name: 'after-upload-backup', targets: [{ address: `127.0.0.1:${up.port}` }] })
    await createHost(stack, { domain: 'after.upload.example.test', target_group_id: group.id })
    const hostsBefore = (await api('/api/hosts')).json
    const auditBefore = (await restoreRows()).length

    // Another program's SQLite file, gzip-compressed like a backup.
    const foreignFile = join(makeTempDir('foreign-db-'), 'other.db')
    const foreign = createClient({ url: `file:${foreignFile}` })
    await foreign.execute('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)')
    foreign.close()
    // The panel's own backup with a migration this panel does not know: a newer panel wrote it.
    const newerFile = join(makeTempDir('newer-db-'), 'newer.db')
    writeFileSync(newerFile, gunzipSync(good))
    const newer = createClient({ url: `file:${newerFile}` })
    await newer.execute(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_the_future', '2030-01-01T00:00:00Z')",
    )
    newer.close()

    const cases: Array<[string, Buffer, RegExp]> = [
      ['garbage', Buffer.from('this is not a backup at all\n'), /not a panel backup \(neither gzip nor a database\).*Download in Backups/],
      ['cut off', good.subarray(0, Math.floor(good.length / 2)), /gzip is damaged or cut off.*download the backup again/],
      ['foreign', gzipSync(readFileSync(foreignFile)), /not a panel database/],
      [
        'newer',
        gzipSync(readFileSync(newerFile)),
        /written by a newer panel \(database schema 9999; this panel knows up to \d+\): upgrade the panel/,
      ],
    ]
    for (const [what, bytes, message] of cases) {
      const res = await uploadRestore(bytes, `${what}.db.gz`)
      expect(res.status, `${what}: ${res.text}`).toBe(400)
      expect(res.json.error, what).toMatch(message)
      expect(res.json.error, what).toContain(`the uploaded file "${what}.db.gz"`)
    }
    // Nothing changed: the session still works, the hosts are as they were, no restore was recorded, no file left behind.
    expect((await api('/api/hosts')).json).toEqual(hostsBefore)
    expect((await restoreRows()).length).toBe(auditBefore)
    expect(readdirSync(backupsDir()).filter((f) => f.startsWith('.restore'))).toEqual([])
    const none = await stack.panel.request('/api/backups/restore', { method: 'POST', cookie: stack.admin, form: new FormData() })
    expect(none.status).toBe(400)
    expect(none.json.error).toMatch(/one part "backup"/)
  })

  it('a valid uploaded backup restores: the deleted host comes back in the proxy, every session ends, and the audit row names the file', async () => {
    const group = await createGroup(stack, { name: 'uploaded-g', targets: [{ address: `127.0.0.1:${up.port}` }] })
    const host = (await createHost(stack, { domain: 'uploaded.example.test', target_group_id: group.id })).json
    const bytes = await downloadedBackup()
    expect((await api(`/api/hosts/${host.id}`, 'DELETE')).status).toBe(204)
    await eventually(
      () => httpRequest({ port: stack.httpPort, host: 'uploaded.example.test' }),
      (r) => r.status !== 200,
      10_000,
    )
    const oldAdmin = stack.admin

    const res = await uploadRestore(bytes, 'from-another-machine.db.gz')
    expect(res.status, res.text).toBe(200)
    expect(res.json.restored).toEqual({
      file_name: 'from-another-machine.db.gz',
      size_bytes: bytes.length,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    })
    expect(res.json.reconcile.status).toBe('applied')
    expect(res.json.sessions_ended).toBeGreaterThanOrEqual(1)
    expect((await stack.panel.request('/api/hosts', { cookie: oldAdmin })).status).toBe(401)
    stack.admin = await stack.panel.login()
    expect((await api(`/api/hosts/${host.id}`)).json.domain).toBe('uploaded.example.test')
    const served = await eventually(
      () => httpRequest({ port: stack.httpPort, host: 'uploaded.example.test' }),
      (r) => r.status === 200,
      10_000,
    )
    expect(JSON.parse(served.body).upstream).toBe(up.port)
    const rows = await restoreRows()
    expect(JSON.parse(String(rows.at(-1)!.raw))).toMatchObject({
      uploaded: { file_name: 'from-another-machine.db.gz', size_bytes: bytes.length },
      sessions_ended: res.json.sessions_ended,
    })
    expect(readdirSync(backupsDir()).filter((f) => f.startsWith('.restore'))).toEqual([])
  })
})
