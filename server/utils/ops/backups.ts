import { createHash } from 'node:crypto'
import {
  closeSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip, gunzipSync, gzipSync } from 'node:zlib'
import { createClient } from '@libsql/client'
import { Cron } from 'croner'
import { getConfig } from '../core/config'
import {
  filePathOfUrl,
  getClient,
  getDatabaseUrl,
  getDb,
  knownMigrationNames,
  knownSchemaVersion,
  replaceDatabaseFile,
  runWrite,
  withMigratedFile,
} from '../core/db'
import { badRequest, notFound, upstreamUnavailable } from '../core/errors'
import { getSetting } from '../core/settings'
import { writeAudit, systemActor, type AuditContext } from '../core/audit'
import { kvClearAll } from '../core/kv'
import { loadStrictSessions } from '../auth/strict-mode'
import { logger } from '../core/log'
import { emitPanelEvent } from './events'
import { reconcileNow } from '../proxy/sync/reconcile'
import { carryOverCredentials, type CarriedOver } from '../auth/carry-over'
import { BACKUP_UNPACKED_LIMIT_BYTES } from './backup-limits'

// Backups are consistent snapshots (VACUUM INTO, never a copy of a live WAL
// file), gzip-compressed, with a SHA-256 beside them. Their metadata lives in a
// sidecar JSON next to each file, not in the database: a restore replaces the
// database and must not forget the backups taken after the snapshot.

export interface BackupMeta {
  id: number
  file_name: string
  size_bytes: number
  created_at: string
  kind: 'scheduled' | 'manual'
  status: 'ok' | 'failed'
  sha256: string | null
  error?: string
}

const _dir = () => join(getConfig().dataDir, 'backups')
const _sidecar = (id: number) => join(_dir(), `backup-${id}.json`)

function _readAll(): BackupMeta[] {
  if (!existsSync(_dir())) return []
  return readdirSync(_dir())
    .filter((f) => /^backup-\d+\.json$/.test(f))
    .map((f) => {
      try {
        return JSON.parse(readFileSync(join(_dir(), f), 'utf8')) as BackupMeta
      } catch {
        return null
      }
    })
    .filter((m): m is BackupMeta => !!m)
    .sort((a, b) => b.id - a.id)
}

export function listBackups(): BackupMeta[] {
  return _readAll()
}

function _get(id: number): BackupMeta {
  const meta = _readAll().find((m) => m.id === id)
  if (!meta) throw notFound('backup', id)
  return meta
}

export async function createBackup(kind: BackupMeta['kind'], ctx: AuditContext): Promise<BackupMeta> {
  const dbPath = filePathOfUrl(getDatabaseUrl() ?? '')
  if (!dbPath) throw upstreamUnavailable('backups', 'the database is a libSQL server; back it up on that server')
  let id = Date.now()
  while (existsSync(_sidecar(id))) id++
  const fileName = `panel-${new Date(id).toISOString().replace(/[:.]/g, '-')}.db.gz`
  const tmp = join(_dir(), `.snapshot-${id}.db`)
  let meta: BackupMeta
  try {
    mkdirSync(_dir(), { recursive: true, mode: 0o700 })
    // Serialised with the writes, so the snapshot is one consistent state.
    await runWrite(() => getClient().execute({ sql: 'VACUUM INTO ?', args: [tmp] }))
    const gz = gzipSync(readFileSync(tmp))
    writeFileSync(join(_dir(), fileName), gz, { mode: 0o600 })
    meta = {
      id,
      file_name: fileName,
      size_bytes: gz.length,
      created_at: new Date(id).toISOString(),
      kind,
      status: 'ok',
      sha256: createHash('sha256').update(gz).digest('hex'),
    }
  } catch (err) {
    meta = {
      id,
      file_name: fileName,
      size_bytes: 0,
      created_at: new Date(id).toISOString(),
      kind,
      status: 'failed',
      sha256: null,
      error: (err as Error).message,
    }
  } finally {
    try {
      rmSync(tmp, { force: true })
    } catch {
      /* the folder itself is unusable; the failure is recorded below */
    }
  }
  try {
    writeFileSync(_sidecar(id), JSON.stringify(meta, null, 2))
  } catch {
    /* the folder itself is the problem; the audit row says so */
  }
  if (meta.status === 'ok') {
    await writeAudit(ctx, 'backup_create', { backup_id: id, kind, size_bytes: meta.size_bytes })
  } else {
    logger.error(`backup failed: ${meta.error}`)
    await writeAudit(ctx, 'backup_failed', { backup_id: id, kind, error: meta.error })
    emitPanelEvent('backup_failed', { backup_id: id, kind, error: meta.error })
  }
  return meta
}

/** Opens the backup's bytes: gunzipped, checksum verified. */
function _snapshotBytes(meta: BackupMeta): Buffer {
  if (meta.status !== 'ok') throw badRequest(`backup ${meta.id} failed when it was taken and cannot be used`)
  const path = join(_dir(), meta.file_name)
  if (!existsSync(path)) throw badRequest(`backup ${meta.id}: its file ${meta.file_name} is missing`)
  const gz = readFileSync(path)
  if (createHash('sha256').update(gz).digest('hex') !== meta.sha256)
    throw badRequest(`backup ${meta.id}: the file does not match its checksum (corrupted)`)
  try {
    return gunzipSync(gz)
  } catch {
    throw badRequest(`backup ${meta.id}: the file is not valid gzip (corrupted)`)
  }
}

/** The backup's file, for an admin (the route checks the role); the download is audited. */
export async function downloadBackup(id: number, ctx: AuditContext): Promise<{ fileName: string; bytes: Buffer }> {
  const meta = _get(id)
  if (meta.status !== 'ok') throw notFound('backup file', id)
  const bytes = readFileSync(join(_dir(), meta.file_name))
  // The file holds every password hash and sealed secret: who took a copy is on record.
  await writeAudit(ctx, 'backup_download', { backup_id: id, file_name: meta.file_name, size_bytes: bytes.length })
  return { fileName: meta.file_name, bytes }
}

export async function deleteBackup(id: number, ctx: AuditContext): Promise<void> {
  const meta = _get(id)
  rmSync(join(_dir(), meta.file_name), { force: true })
  rmSync(_sidecar(id), { force: true })
  await writeAudit(ctx, 'backup_delete', { backup_id: id })
}

/**
 * Refuses (400) a file that is not a sound panel database, or one a newer panel wrote (this one
 * cannot know its tables), before anything is replaced. `label` names the file in the message.
 */
async function _assertPanelDatabase(path: string, label: string): Promise<void> {
  const check = createClient({ url: `file:${path}` })
  let applied: { version: number; name: string }[]
  try {
    const r = await check.execute('PRAGMA integrity_check')
    if (String(r.rows[0]?.[0]) !== 'ok') throw badRequest(`${label}: integrity check failed: ${String(r.rows[0]?.[0]).slice(0, 200)}`)
    applied = (await check.execute('SELECT version, name FROM schema_migrations ORDER BY version')).rows.map((row) => ({
      version: Number(row.version),
      name: String(row.name),
    }))
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode) throw err
    throw badRequest(`${label}: not a panel database (${(err as Error).message.slice(0, 120)})`)
  } finally {
    check.close()
  }
  // Another program's database may have a table of that name: the panel's migrations name it as theirs.
  const known = knownMigrationNames()
  const foreign = applied.find((m) => known.has(m.version) && known.get(m.version) !== m.name)
  if (!applied.length || foreign) throw badRequest(`${label}: not a panel database (its schema_migrations table is not the panel's)`)
  const newest = applied.at(-1)!.version
  if (newest > knownSchemaVersion())
    throw badRequest(
      `${label}: written by a newer panel (database schema ${newest}; this panel knows up to ${knownSchemaVersion()}): upgrade the panel, then restore it`,
    )
}

/**
 * Integrity and schema checks first; then, under the write queue, the snapshot
 * is migrated, given what changed to credentials since it was taken
 * (revocations, deletions, demotions, new passwords: server/utils/auth/carry-over.ts)
 * with every session ended, and only then swapped in; caches dropped and the
 * proxy reconciled. The same for a backup of the list and an uploaded file.
 */
async function _restoreFile(
  candidate: string,
  label: string,
  backupRef: number | string,
  reason: string,
  audit: (carried: CarriedOver) => Promise<unknown>,
) {
  let carried: CarriedOver
  try {
    await _assertPanelDatabase(candidate, label)
    // One queue slot from reading the live tables to the swap: a revocation cannot slip in between.
    carried = await runWrite(async () => {
      const c = await withMigratedFile(candidate, (snapshot) => carryOverCredentials(getDb(), snapshot, backupRef))
      await replaceDatabaseFile(candidate)
      return c
    })
  } finally {
    rmSync(candidate, { force: true })
  }
  await kvClearAll() // cached sessions and decisions belong to the replaced database
  await loadStrictSessions() // and so does strict session mode
  await audit(carried)
  const reconcile = await reconcileNow(reason).catch((err) => ({ status: 'failed', error: (err as Error).message }))
  return { carried, reconcile }
}

export async function restoreBackup(id: number, ctx: AuditContext) {
  const meta = _get(id)
  const bytes = _snapshotBytes(meta)
  const candidate = join(_dir(), `.restore-${id}.db`)
  writeFileSync(candidate, bytes, { mode: 0o600 })
  const { carried, reconcile } = await _restoreFile(candidate, `backup ${id}`, id, `restored backup ${id}`, (c) =>
    writeAudit(ctx, 'backup_restore', { backup_id: id, backup_created_at: meta.created_at, ...c }),
  )
  return { restored: meta, reconcile, ...carried }
}

const _GZIP_MAGIC = Buffer.from([0x1f, 0x8b])
const _SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1')
const _WHAT_TO_UPLOAD = "upload the .db.gz file that Download in Backups gives (the panel's database, gzip-compressed)"

/** Unpacks the upload to `path`: a gzip (as Download gives it) or an uncompressed database, bounded in size. */
async function _unpackUpload(bytes: Buffer, path: string, label: string): Promise<void> {
  if (bytes.subarray(0, _SQLITE_MAGIC.length).equals(_SQLITE_MAGIC)) {
    writeFileSync(path, bytes, { mode: 0o600 })
    return
  }
  if (!bytes.subarray(0, 2).equals(_GZIP_MAGIC))
    throw badRequest(`${label}: not a panel backup (neither gzip nor a database); ${_WHAT_TO_UPLOAD}`)
  let unpacked = 0
  const bounded = new Transform({
    transform(chunk: Buffer, _enc, done) {
      unpacked += chunk.length
      if (unpacked > BACKUP_UNPACKED_LIMIT_BYTES)
        done(
          badRequest(
            `${label}: unpacks to more than ${BACKUP_UNPACKED_LIMIT_BYTES / 1024 ** 3} GiB; restore it with the panel's command line instead`,
          ),
        )
      else done(null, chunk)
    },
  })
  try {
    await pipeline(Readable.from([bytes]), createGunzip(), bounded, createWriteStream(path, { mode: 0o600 }))
  } catch (err) {
    rmSync(path, { force: true })
    if ((err as { statusCode?: number }).statusCode) throw err
    // A cut-off download ends early ("unexpected end of file"); a damaged one fails its checksum.
    throw badRequest(`${label}: the gzip is damaged or cut off (${(err as Error).message}); download the backup again and upload that file`)
  }
  const head = Buffer.alloc(_SQLITE_MAGIC.length)
  const fd = openSync(path, 'r')
  try {
    readSync(fd, head, 0, head.length, 0)
  } finally {
    closeSync(fd)
  }
  if (!head.equals(_SQLITE_MAGIC)) {
    rmSync(path, { force: true })
    throw badRequest(`${label}: not a panel backup (the gzip does not hold a database); ${_WHAT_TO_UPLOAD}`)
  }
}

/**
 * Restores an uploaded backup file (admin only: the route's declaration): the same checks and
 * credential carry-over as a backup of the list; a file that is not a panel backup, is damaged
 * or comes from a newer panel is refused (400) with nothing changed.
 */
export async function restoreUploadedBackup(upload: { fileName: string; bytes: Buffer }, ctx: AuditContext) {
  const label = `the uploaded file "${upload.fileName}"`
  mkdirSync(_dir(), { recursive: true, mode: 0o700 })
  let n = Date.now()
  while (existsSync(join(_dir(), `.restore-upload-${n}.db`))) n++
  const candidate = join(_dir(), `.restore-upload-${n}.db`)
  try {
    await _unpackUpload(upload.bytes, candidate, label)
  } catch (err) {
    rmSync(candidate, { force: true })
    throw err
  }
  const sha256 = createHash('sha256').update(upload.bytes).digest('hex')
  const restored = { file_name: upload.fileName, size_bytes: upload.bytes.length, sha256 }
  const { carried, reconcile } = await _restoreFile(candidate, label, label, `restored the uploaded backup ${upload.fileName}`, (c) =>
    writeAudit(ctx, 'backup_restore', { uploaded: restored, ...c }),
  )
  return { restored, reconcile, ...carried }
}

export function lastBackup() {
  const last = _readAll()[0]
  return { last_backup_at: last?.created_at ?? null, last_backup_status: last?.status ?? null }
}

/** One scheduler tick: a run when backup.schedule fell due since the last tick, then retention. */
let _lastTickMs = Date.now()
export async function backupSchedulerTick(nowMs = Date.now()): Promise<boolean> {
  const since = _lastTickMs
  _lastTickMs = nowMs
  const schedule = await getSetting<string>('backup.schedule')
  const due = new Cron(schedule, { paused: true, timezone: 'UTC' }).nextRun(new Date(since))
  if (!due || due.getTime() > nowMs) return false
  await createBackup('scheduled', systemActor('backup-scheduler'))
  const keepMs = (await getSetting<number>('backup.retention_days')) * 86_400_000
  for (const m of _readAll()) {
    if (Date.parse(m.created_at) < nowMs - keepMs) {
      rmSync(join(_dir(), m.file_name), { force: true })
      rmSync(_sidecar(m.id), { force: true })
      await writeAudit(systemActor('backup-scheduler'), 'backup_expire', { backup_id: m.id })
    }
  }
  return true
}
