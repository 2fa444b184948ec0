import { mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { AsyncLocalStorage } from 'node:async_hooks'
import { createClient, type Client } from '@libsql/client'
import { drizzle, type LibSQLDatabase } from 'drizzle-orm/libsql'
import * as schema from '../../../db/schema'
import { migrateUp, type Migration } from './migrations'

export type Db = LibSQLDatabase<typeof schema>
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
/** Anything a query can run on: the database, or an open write transaction. */
export type Executor = Db | Tx

interface _Open {
  client: Client
  db: Db
  url: string
  authToken?: string
  migrations: Migration[]
}
let _open: _Open | undefined

export function isFileUrl(url: string): boolean {
  return url.startsWith('file:')
}

export function filePathOfUrl(url: string): string | undefined {
  if (!isFileUrl(url)) return undefined
  return url.replace(/^file:(\/\/)?/, '').split('?')[0]
}

/** Opens a client (WAL + busy timeout for embedded files) and applies pending migrations. */
export async function openDatabase(opts: { url: string; authToken?: string; migrations: Migration[] }): Promise<_Open> {
  const path = filePathOfUrl(opts.url)
  if (path) mkdirSync(dirname(path), { recursive: true })
  // `timeout` is the busy timeout of every pooled connection; pragmas are
  // rejected by a libSQL server, so they are only sent for file: URLs.
  const client = createClient({ url: opts.url, authToken: opts.authToken, timeout: 5000 })
  if (path) await client.execute('PRAGMA journal_mode = WAL')
  await migrateUp(client, opts.migrations)
  const db = drizzle({ client, schema })
  _open = { client, db, url: opts.url, authToken: opts.authToken, migrations: opts.migrations }
  return _open
}

/**
 * Swaps the embedded database file for another (a restore), under the write
 * queue: the client is closed, the file replaced, and the database reopened
 * and migrated forward.
 */
export async function replaceDatabaseFile(replacement: string): Promise<void> {
  const current = _open
  const path = current && filePathOfUrl(current.url)
  if (!current || !path) throw new Error('only an embedded (file:) database can be replaced')
  await runWrite(async () => {
    current.client.close()
    for (const suffix of ['-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true })
    renameSync(replacement, path)
    await openDatabase({ url: current.url, authToken: current.authToken, migrations: current.migrations })
  })
}

/**
 * Opens another database file (a backup about to be restored), brings it to
 * this panel's schema and hands it to `fn`. Rollback journal, not WAL: every
 * change is in the file itself when it is closed and renamed into place.
 */
export async function withMigratedFile<T>(path: string, fn: (db: Db) => Promise<T>): Promise<T> {
  if (!_open) throw new Error('database is not open yet')
  const client = createClient({ url: `file:${path}` })
  try {
    await client.execute('PRAGMA journal_mode = DELETE')
    await migrateUp(client, _open.migrations)
    return await fn(drizzle({ client, schema }))
  } finally {
    client.close()
  }
}

/** The newest schema version this panel knows: a database past it was written by a newer panel. */
export function knownSchemaVersion(): number {
  if (!_open) throw new Error('database is not open yet')
  return _open.migrations.at(-1)?.version ?? 0
}

/** The name of each migration this panel knows, by version. */
export function knownMigrationNames(): Map<number, string> {
  if (!_open) throw new Error('database is not open yet')
  return new Map(_open.migrations.map((m) => [m.version, m.name]))
}

export function getDb(): Db {
  if (!_open) throw new Error('database is not open yet')
  return _open.db
}

export function getClient(): Client {
  if (!_open) throw new Error('database is not open yet')
  return _open.client
}

export function getDatabaseUrl(): string | undefined {
  return _open?.url
}

export function closeDatabase(): void {
  _open?.client.close()
  _open = undefined
}

// One write at a time in this process: an open libSQL transaction plus any other
// write on another pooled connection fails with SQLITE_BUSY while blocking the
// event loop (stack.md §5). Re-entrant: a write started inside a write runs inline.
const _insideWrite = new AsyncLocalStorage<true>()
let _tail: Promise<unknown> = Promise.resolve()
let _waiting = 0

export function runWrite<T>(fn: () => Promise<T>): Promise<T> {
  if (_insideWrite.getStore()) return fn()
  _waiting++
  const run = _tail.then(() => {
    _waiting--
    return _insideWrite.run(true, fn)
  })
  _tail = run.catch(() => {})
  return run
}

/**
 * Runs `fn` as if no write were under way. Work a writer starts without awaiting it (an event's
 * listeners, an after-commit callback) would otherwise inherit the writer's context, and its own
 * writes would run inline, outside the queue, on another connection than the open transaction:
 * SQLITE_BUSY after a busy wait that blocks the event loop (seen in CI as "database is locked").
 */
export function outsideWrite<T>(fn: () => T): T {
  return _insideWrite.exit(fn)
}

const _afterCommit = new AsyncLocalStorage<Array<() => void>>()

// Dry runs (?dry_run=1, issue 17): the mutation runs as usual inside its
// transaction, validation and conflicts included; just before commit the
// transaction's state is described and the transaction rolled back. The flag
// lives here, with the transactions it governs: whoever writes asks it here (the
// reconciler: no push in a dry run), and the describer travels with the flag
// instead of being a hook registered for every transaction.
interface _DryRun {
  describe: (tx: Tx) => Promise<unknown>
}
const _dryRun = new AsyncLocalStorage<_DryRun>()

/** Whether the current work is a dry run: its transaction is rolled back before commit. */
export function isDryRun(): boolean {
  return _dryRun.getStore() !== undefined
}

class _DryRunRollback extends Error {
  constructor(readonly answer: unknown) {
    super('dry run: rolled back')
  }
}

/**
 * Runs `mutation` as a dry run: its first write transaction is described by `describe`
 * just before commit, then rolled back. The description, or `undefined` when the
 * mutation committed no transaction (it wrote nothing).
 */
export async function rehearse<A>(mutation: () => Promise<unknown>, describe: (tx: Tx) => Promise<A>): Promise<A | undefined> {
  try {
    await _dryRun.run({ describe }, mutation)
  } catch (err) {
    if (err instanceof _DryRunRollback) return err.answer as A
    throw err
  }
  return undefined
}

/** Runs `fn` in one write transaction: throwing rolls everything back. */
export function writeTransaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
  return runWrite(async () => {
    const callbacks: Array<() => void> = []
    const body = async (tx: Tx) => {
      const r = await fn(tx)
      const dryRun = _dryRun.getStore()
      if (dryRun) throw new _DryRunRollback(await dryRun.describe(tx))
      return r
    }
    const result = await _afterCommit.run(callbacks, () => getDb().transaction(body, { behavior: 'immediate' }))
    for (const cb of callbacks) {
      try {
        outsideWrite(cb)
      } catch {
        /* a listener's failure is not the writer's */
      }
    }
    return result
  })
}

/** Runs `cb` once the surrounding write transaction has committed (at once outside one). */
export function afterCommit(cb: () => void): void {
  const pending = _afterCommit.getStore()
  if (pending) pending.push(cb)
  else cb()
}

export function writeQueueDepth(): number {
  return _waiting
}
